"""PyTorch Lightning with reduce_verify.lightning, over real Gloo worlds of CPU processes.

Asserted: a LightningModule trained 10 optimizer steps on a global batch of 4 micro-batches,
split as 1 x 4, 2 x 2 and 4 x 1 devices x accumulate_grad_batches, ends with one parameter
digest under ExactAccumulation (one device without a process group, and DDP over Gloo), and
that digest is the one a plain loop of ExactGradAccumulator gives without Lightning; every
step takes the same 4 micro-batches whatever the split; gradient clipping set in the Trainer
clips the exact mean (one digest again, another one); a global batch of 6 split as 1 x 6 and
2 x 3 (accumulate_grad_batches not a power of two) gives one digest too; the mutant that
leaves Lightning's 1 / accumulate_grad_batches in the gradients changes it; CommHook runs the
hook on CPU processes; what ExactAccumulation refuses raises InputError naming the setting.
Reported, not asserted: the distinct digests of Lightning's own path over the same splits,
and the steps a hook given as DDPStrategy(ddp_comm_hook=...) saw on CPU processes.

Each world's processes are started here with a deadline: a world that does not exit fails."""

import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from world_processes import finish_world

try:
    import torch  # noqa: F401
    import pytorch_lightning  # noqa: F401
except ImportError as missing:
    print(f"{missing}: skipped (needs torch and pytorch_lightning)")
    sys.exit(77)

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = HERE / "lightning_training.py"
WORLDS = (1, 2, 4)
STEPS = 10
MICRO_BATCHES = 4
DEADLINE = 180  # seconds for one world, start to exit (4 processes on 2 cores take ~25 s)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_world(world, folder):
    """Starts the W ranks as Lightning's externally launched processes and waits for all of
    them to exit before the deadline; returns each rank's results."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    ranks = []
    for rank in range(world):
        environment = dict(os.environ, WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                           NODE_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                           GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
        log = open(folder / f"rank{rank}.log", "w")
        ranks.append((subprocess.Popen([sys.executable, str(SCRIPT), str(folder)], env=environment,
                                       stdout=log, stderr=subprocess.STDOUT), log))
    return finish_world(world, ranks, folder, time.monotonic() + DEADLINE, DEADLINE, tail=25)


class Lightning(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory(prefix="rv-lightning-")
        cls.results = {}
        started = time.monotonic()
        for world in WORLDS:  # one at a time: the CI box has 2 cores
            begun = time.monotonic()
            cls.results[world] = run_world(world, pathlib.Path(cls.temp.name) / f"w{world}")
            print(f"[W = {world}: {time.monotonic() - begun:.1f} s; fits (rank 0): "
                  f"{cls.results[world][0]['times']}]", file=sys.stderr)
        print(f"[all worlds: {time.monotonic() - started:.1f} s]", file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def digest(self, run, world):
        """The run's final digest, after checking that every rank ended with it."""
        seen = {ranks[run]["digest"] for ranks in self.results[world]}
        self.assertEqual(len(seen), 1, f"{run}, W = {world}: the ranks disagree: {seen}")
        return seen.pop()

    def test_every_step_takes_the_same_micro_batches(self):
        for world in WORLDS:
            for run in ("exact", "default", "exact-clipped", "mutant"):
                for rank, results in enumerate(self.results[world]):
                    self.assertEqual(results[run]["global_step"], STEPS, f"{run}, W = {world}")
                for step in range(STEPS):
                    union = sorted(i for results in self.results[world]
                                   for i in results[run]["seen"][step])
                    self.assertEqual(union, list(range(MICRO_BATCHES * step,
                                                       MICRO_BATCHES * (step + 1))),
                                     f"{run}, W = {world}, step {step}")

    def test_exact_accumulation_gives_one_digest(self):
        seen = {f"exact {w} x {MICRO_BATCHES // w}": self.digest("exact", w) for w in WORLDS}
        seen["exact 1 x 4, DDP world of one"] = self.digest("exact-ddp1", 1)
        seen["plain ExactGradAccumulator loop, no Lightning"] = self.digest("reference", 1)
        self.assertEqual(len(set(seen.values())), 1, seen)
        print(f"\nExactAccumulation: {len(set(seen.values()))} digest over {len(seen)} runs: "
              f"{seen['exact 1 x 4']}", file=sys.stderr)

    def test_a_k_that_is_not_a_power_of_two(self):
        # 1 x 6 and 2 x 3: Lightning divides the loss by 6 and by 3, neither exactly.
        seen = {"exact 1 x 6": self.digest("exact-6", 1), "exact 2 x 3": self.digest("exact-6", 2),
                "plain loop of 6": self.digest("reference-6", 1)}
        self.assertEqual(len(set(seen.values())), 1, seen)

    def test_the_mean_is_over_every_micro_batch_of_every_rank(self):
        for world in WORLDS:
            for rank, results in enumerate(self.results[world]):
                self.assertEqual(results["exact"]["micro_batches"], MICRO_BATCHES,
                                 f"W = {world}, rank {rank}")

    def test_clipping_clips_the_exact_mean(self):
        clipped = {w: self.digest("exact-clipped", w) for w in WORLDS}
        self.assertEqual(len(set(clipped.values())), 1, clipped)
        self.assertNotEqual(clipped[1], self.digest("exact", 1), "gradient_clip_val did not clip")

    def test_the_mutant_changes_it(self):
        # Lightning's 1/K left in: the gradients come out 1/4, 1/2 and 1 times the exact mean.
        mutant = {w: self.digest("mutant", w) for w in WORLDS}
        self.assertNotEqual(mutant[1], self.digest("exact", 1))
        self.assertGreater(len(set(mutant.values())), 1, mutant)

    def test_lightning_default_digests_are_reported(self):
        seen = {f"{w} x {MICRO_BATCHES // w}": self.digest("default", w) for w in WORLDS}
        print(f"\nLightning's default (loss / K, float accumulation, DDP all-reduce): "
              f"{len(set(seen.values()))} distinct digests over {len(seen)} splits",
              file=sys.stderr)
        for name, value in seen.items():
            print(f"  {name}: {value}", file=sys.stderr)

    def test_comm_hook_runs_the_hook_on_cpu_processes(self):
        for rank, results in enumerate(self.results[2]):
            self.assertEqual(results["hook-callback"]["hook_steps"], STEPS, f"rank {rank}")
        self.digest("hook-callback", 2)
        steps = [results["hook-strategy"]["hook_steps"] for results in self.results[2]]
        print(f"\nDDPStrategy(ddp_comm_hook=fixed_order_hook) on CPU processes: the hook saw "
              f"{steps} synchronised steps on ranks 0, 1 (CommHook: {STEPS})", file=sys.stderr)

    def test_what_it_refuses_is_named(self):
        errors = self.results[1][0]["errors"]
        for case, words in (("manual", "automatic_optimization = False"),
                            ("scaler", "GradScaler"),
                            ("hook-twice", "ddp_comm_hook")):
            self.assertEqual(errors[case]["type"], "InputError", f"{case}: {errors[case]}")
            self.assertIn(words, errors[case]["message"], case)


if __name__ == "__main__":
    unittest.main(verbosity=2)
