"""Exact gradient accumulation over real Gloo worlds (docs/DESIGN.md §11).

Asserted: a transformer block trained 10 steps on a global batch of 8 micro-batches ends with
one parameter digest whether the batch is split as 1 × 8, 2 × 4, 4 × 2 or 8 × 1 processes ×
accumulation steps, dealt shuffled and unevenly to 3 ranks, or resumed at step 5 from a
checkpoint of a 2-process run in a 4-process one (the 2 × 4 and 8 × 1 runs through DDP's
no_sync()); the mutants (float accumulation, a dropped micro-batch) change it. Bad input raises
on every rank before any gradient moves. Reported, not asserted: the distinct digests of the
same runs with DDP's default all-reduce and float accumulation."""

import os
import pathlib
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import torch  # noqa: F401
except ImportError:
    print("torch is not installed (Debian: python3-torch): skipped")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(__file__))
import accumulation_training as training  # noqa: E402


RECORDED_STEP = 3
TOOL = os.environ.get("REDUCE_VERIFY", "reduce-verify")


def worlds(checkpoints):
    exact_half, float_half = (str(checkpoints / name) for name in ("exact.pt", "float.pt"))
    return {
        1: [dict(name="exact-1x8", mode="exact",
                 record=[RECORDED_STEP, str(checkpoints / "recorded-1x8")]), dict(name="float-1x8", mode="ddp-float"),
            dict(name="mutant-float-1x8", mode="mutant-float")],
        2: [dict(name="exact-2x4", mode="exact", use_ddp=True,
                 record=[RECORDED_STEP, str(checkpoints / "recorded-2x4")]),
            dict(name="float-2x4", mode="ddp-float"),
            dict(name="mutant-drop-2x4", mode="mutant-drop"),
            dict(name="exact-first-half", mode="exact", last_step=5, checkpoint_out=exact_half),
            dict(name="float-first-half", mode="ddp-float", last_step=5,
                 checkpoint_out=float_half)],
        3: [dict(name="exact-shuffled", mode="exact", shuffled=True),
            dict(name="float-shuffled", mode="ddp-float", shuffled=True)],
        4: [dict(name="exact-4x2", mode="exact"), dict(name="float-4x2", mode="ddp-float"),
            dict(name="exact-resumed", mode="exact", first_step=5, checkpoint_in=exact_half),
            dict(name="float-resumed", mode="ddp-float", first_step=5, checkpoint_in=float_half)],
        8: [dict(name="exact-8x1", mode="exact", use_ddp=True),
            dict(name="float-8x1", mode="ddp-float")],
    }


class ExactAccumulation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory(prefix="rv-accumulate-")
        root = pathlib.Path(cls.temp.name)
        training.prepare_forkserver()
        cls.digests = {}
        started = time.monotonic()
        for world, runs in worlds(root).items():  # in order: the 2-process run checkpoints
            begun = time.monotonic()
            per_rank = training.run_world(world, runs, root / f"w{world}")
            for run in runs:
                seen = {str(ranks[run["name"]]) for ranks in per_rank}
                assert len(seen) == 1, f"{run['name']}: the ranks disagree: {seen}"
                result = per_rank[0][run["name"]]
                if "record" in run:
                    cls.digests[run["name"] + "@step"] = result[1]
                    result = result[0]
                cls.digests[run["name"]] = result
            print(f"[W = {world}: {time.monotonic() - begun:.1f} s]", file=sys.stderr)
        begun = time.monotonic()
        cls.errors = training.run_errors(root / "errors")
        cls.root = root
        print(f"[errors: {time.monotonic() - begun:.1f} s; all: {time.monotonic() - started:.1f} s]",
              file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    EXACT = ["exact-1x8", "exact-2x4", "exact-4x2", "exact-8x1", "exact-shuffled",
             "exact-resumed"]

    def test_the_model_is_a_real_one(self):
        parameters = sum(p.numel() for p in training.make_model().parameters())
        self.assertGreaterEqual(parameters, 1_000_000)

    def test_every_split_gives_one_digest(self):
        seen = {name: self.digests[name] for name in self.EXACT}
        self.assertEqual(len(set(seen.values())), 1, seen)

    def test_the_cli_replays_a_recorded_step_as_m_addends(self):
        # Step 3's 8 micro-batch gradients, written by 1 rank or by 2 (4 each): their exact
        # mean over the 8 files is the step's reduced gradient.
        for label in ("1x8", "2x4"):
            files = sorted(str(p) for p in (self.root / f"recorded-{label}").glob("rank*-mb*.f32"))
            self.assertEqual(len(files), training.MICRO_BATCHES, label)
            done = subprocess.run([TOOL, "digest", "--contract", "exact", "--op", "mean",
                                   "--inputs", *files], capture_output=True, text=True,
                                  timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(done.stdout.split()[0], self.digests[f"exact-{label}@step"], label)
        self.assertEqual(self.digests["exact-1x8@step"], self.digests["exact-2x4@step"])

    def test_the_mutants_change_it(self):
        exact = self.digests["exact-1x8"]
        self.assertNotEqual(self.digests["mutant-float-1x8"], exact)
        self.assertNotEqual(self.digests["mutant-drop-2x4"], exact)

    def test_ddp_float_accumulation_digests_are_reported(self):
        names = [name.replace("exact", "float") for name in self.EXACT]
        seen = {name: self.digests[name] for name in names}
        print(f"\nDDP default all-reduce, float accumulation: {len(set(seen.values()))} distinct "
              f"digests over {len(names)} runs", file=sys.stderr)
        for name in names:
            print(f"  {name}: {seen[name]}", file=sys.stderr)
        print(f"  exact (all six): {self.digests['exact-1x8']}", file=sys.stderr)

    def test_bad_input_raises_on_every_rank_before_anything_moves(self):
        for rank, results in enumerate(self.errors):
            for case, words in (("length-disagrees", "accumulator length"),
                                ("dtype-disagrees", "layout")):
                self.assertEqual(results[case].get("type"), "WorldDisagreement",
                                 f"rank {rank}, {case}: {results[case]}")
                self.assertIn(words, results[case]["message"])
            self.assertEqual(results["agrees"], {"ok": True, "value": 2})
            for case, words in (("mean-over-zero", "mean_over = 0"),
                                ("float64-gradient", "torch.float64"),
                                ("parameters-on-two-devices", "bias is on meta")):
                self.assertEqual(results[case].get("type"), "InputError",
                                 f"rank {rank}, {case}: {results[case]}")
                self.assertIn(words, results[case]["message"], case)


if __name__ == "__main__":
    unittest.main(verbosity=2)
