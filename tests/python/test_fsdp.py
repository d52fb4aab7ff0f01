"""FSDP2 with reduce_verify.fsdp, DDP and ZeRO-1 with the exact path, and one process: one set
of weights, over real Gloo worlds of CPU processes (fsdp_training.py is each rank).

Asserted: a 1.3 M-parameter transformer block (LayerNorm, cross-entropy, AdamW, clipping by
reduce_verify.clip_grad_norm_ at a norm that acts) trained 10 steps on a global batch of 8
micro-batches as 1 x 8 (one process), DDP 2 x 4 and 4 x 2 (ExactGradAccumulator), ZeRO-1 2 x 4,
FSDP2 with ours 2 x 4, 4 x 2 and the uneven splits 3 + 3 + 2 and 3 + 2 + 2 + 1 (shuffled each
step) ends with one final parameter digest (FSDP: the gathered full parameters) and one norm per
step; every rank of a run ends with it; ZeRO-1 under the exact DDP hook, and FSDP1 under
register_fsdp1, end where DDP under the hook does (K = 1); each mutant changes the digest (the
norm summed in float, the micro-batches accumulated in float, each shard reduced by the wrong
rank); FSDP's trail audits equal to DDP's and names step 0, bucket 0 against the wrong-shard
mutant's; the Recorder's FSDP recordings replay (exit 0) under both contracts; bad input (several parameter groups, float64, ReduceOp.MAX, a PREMUL_SUM factor that
is no mean, FSDP's divide factor changed after register, ranks whose layouts differ,
fixed-order or FSDP1 accumulation, a backward pass without micro_batch() while accumulating)
raises a named error on every rank, a peer that runs no reduce-scatter a WorldTimeout; every
shard our reduce-scatter writes has the all-reduce's bits at its indices (f32, bf16, f16;
fixed-order and exact; AVG, SUM, PREMUL_SUM; accumulation). Reported, not asserted: the distinct digests of
torch's own paths (float accumulation, FSDP's and DDP's reduction,
torch.nn.utils.clip_grad_norm_) over the same splits.

Each world's processes are started here with a deadline: a world that does not exit fails."""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import unittest

from world_processes import finish_world

try:
    import torch
    from torch.distributed.fsdp import FSDPModule
    if not hasattr(FSDPModule, "set_custom_reduce_scatter"):
        raise ImportError("FSDPModule has no set_custom_reduce_scatter")
except Exception as missing:  # torch 1.13's fsdp package does not even import on 3.11
    version = getattr(sys.modules.get("torch"), "__version__", "none")
    print(f"{missing}: skipped (needs FSDP2 with FSDPModule.set_custom_reduce_scatter, "
          f"torch 2.11 or 2.13; this is torch {version})")
    sys.exit(77)

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = HERE / "fsdp_training.py"
DEADLINE = 240  # seconds for one world, start to exit
TOOL = os.environ.get("REDUCE_VERIFY", "reduce-verify")

OURS = {
    1: [{"name": "single 1x8", "mode": "single"}],
    2: [{"name": "ddp 2x4", "mode": "ddp", "trail": "ddp.trail"},
        {"name": "fsdp 2x4", "mode": "fsdp", "trail": "fsdp.trail"},
        {"name": "zero1 2x4", "mode": "zero1"}],
    4: [{"name": "ddp 4x2", "mode": "ddp"}, {"name": "fsdp 4x2", "mode": "fsdp"},
        {"name": "fsdp 3+2+2+1", "mode": "fsdp", "split": [3, 2, 2, 1]}],
    3: [{"name": "fsdp 3+3+2", "mode": "fsdp", "split": [3, 3, 2]}],
}
DEFAULTS = {
    1: [{"name": "single 1x8 default", "mode": "single-default"}],
    2: [{"name": "ddp 2x4 default", "mode": "ddp-default"},
        {"name": "fsdp 2x4 default", "mode": "fsdp-default"}],
    4: [{"name": "ddp 4x2 default", "mode": "ddp-default"},
        {"name": "fsdp 4x2 default", "mode": "fsdp-default"}],
    3: [{"name": "fsdp 3+3+2 default", "mode": "fsdp-default", "split": [3, 3, 2]}],
}
# The mutants (each must change the digest) and the K = 1 runs compared pairwise.
OTHER_RUNS = {
    2: [{"name": "mutant accumulate-float 2x4", "mode": "fsdp", "mutant": "accumulate-float"},
        {"name": "mutant wrong-shard 2x4", "mode": "fsdp", "mutant": "wrong-shard",
         "trail": "wrong-shard.trail"},
        {"name": "ddp-hook 2x1", "mode": "ddp-hook"},
        {"name": "zero1-hook 2x1", "mode": "zero1-hook"},
        {"name": "fsdp1-hook 2x1", "mode": "fsdp1-hook"},
        {"name": "fsdp exact 2x1", "mode": "fsdp-k1", "recording": "exact.recording"}],
    # W = 3, where a fixed-order fold ((a + b) + c) can differ from the exact sum.
    3: [{"name": "fsdp fixed-order 3x1", "mode": "fsdp-k1", "contract": "fixed-order",
         "recording": "fixed-order.recording"},
        {"name": "ddp-hook fixed-order 3x1", "mode": "ddp-hook", "contract": "fixed-order"},
        {"name": "ddp-hook 3x1", "mode": "ddp-hook"}],
    4: [{"name": "mutant norm-float 4x2", "mode": "fsdp", "mutant": "norm-float"}],
}
# REDUCE_VERIFY_FSDP_W8=1 (a machine with 8 cores or more; the device run) adds W = 8:
# DDP and FSDP2 8 x 1 into the one digest, FSDP2's default 8 x 1 into the report.
WIDE = os.environ.get("REDUCE_VERIFY_FSDP_W8") == "1"
if WIDE:
    OURS[8] = [{"name": "ddp 8x1", "mode": "ddp"}, {"name": "fsdp 8x1", "mode": "fsdp"}]
    DEFAULTS[8] = [{"name": "fsdp 8x1 default", "mode": "fsdp-default"}]
# The W = 3 world ends with destroy_process_group() and the interpreter's exit (the others
# leave by os._exit): a hang or an abort there fails the test.
TEARDOWN = [{"name": "teardown", "mode": "teardown"}]
ERRORS = [{"name": "contract", "mode": "contract"}, {"name": "errors", "mode": "errors"}]


def audit(a, b):
    done = subprocess.run([TOOL, "audit", str(a), str(b)], capture_output=True, text=True,
                          timeout=60)
    return done.returncode, done.stdout, done.stderr


def start_world(world, runs, folder):
    folder.mkdir(parents=True, exist_ok=True)
    ranks = []
    for rank in range(world):
        environment = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world),
                           GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
        log = open(folder / f"rank{rank}.log", "w")
        ranks.append((subprocess.Popen([sys.executable, str(SCRIPT), str(folder), json.dumps(runs)],
                                       env=environment, stdout=log, stderr=subprocess.STDOUT),
                      log))
    return ranks


class FSDP(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory(prefix="rv-fsdp-")
        root = pathlib.Path(cls.temp.name)
        cls.results = {}
        cls.folders = {}
        started = time.monotonic()
        # Two worlds at a time at most (the CI box has 2 cores): 4 alone, 2 with the errors'
        # 2, 3 with 1.
        batches = [[(4, OURS[4] + DEFAULTS[4] + OTHER_RUNS[4])],
                   [(2, OURS[2] + DEFAULTS[2] + OTHER_RUNS[2]), ("errors", ERRORS)],
                   [(3, OURS[3] + DEFAULTS[3] + OTHER_RUNS[3] + TEARDOWN),
                    (1, OURS[1] + DEFAULTS[1])]]
        if WIDE:
            batches.append([(8, OURS[8] + DEFAULTS[8])])
        for batch in batches:
            begun = time.monotonic()
            running = []
            for key, runs in batch:
                world = 2 if key == "errors" else key
                folder = root / f"w{key}"
                cls.folders[key] = folder
                running.append((key, world, start_world(world, runs, folder), folder))
            deadline = time.monotonic() + DEADLINE
            for key, world, ranks, folder in running:
                cls.results[key] = finish_world(world, ranks, folder, deadline, DEADLINE)
            print(f"[worlds {[key for key, *_ in running]}: {time.monotonic() - begun:.1f} s]",
                  file=sys.stderr)
        print(f"[all worlds: {time.monotonic() - started:.1f} s]", file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def digest(self, world, run):
        seen = {ranks[run]["digest"] for ranks in self.results[world]}
        self.assertEqual(len(seen), 1, f"{run}: the ranks end with different parameters: {seen}")
        return seen.pop()

    def ours(self):
        return {run["name"]: self.digest(world, run["name"])
                for world, runs in OURS.items() for run in runs}

    def test_one_digest_for_every_parallelism(self):
        seen = self.ours()
        self.assertEqual(len(set(seen.values())), 1, json.dumps(seen, indent=1))
        print(f"\nours: 1 distinct digest over {len(seen)} runs: {seen['single 1x8']}",
              file=sys.stderr)

    def test_the_model_and_the_clipping(self):
        self.assertGreaterEqual(self.results[1][0]["single 1x8"]["parameters"], 1_000_000)
        norms = self.results[1][0]["single 1x8"]["norms"]
        acting = [n for n in norms if n > 0.5]
        self.assertTrue(acting, f"clipping never acted: norms {norms}")
        # The norm's bits are the same at every W, DDP or FSDP (the float norms of torch's
        # path are reported below).
        for world, runs in OURS.items():
            for run in runs:
                for rank, results in enumerate(self.results[world]):
                    self.assertEqual(results[run["name"]]["norms"], norms,
                                     f"{run['name']}, rank {rank}")

    def test_zero1_with_the_exact_hook_unchanged(self):
        self.assertEqual(self.digest(2, "zero1-hook 2x1"), self.digest(2, "ddp-hook 2x1"))

    def test_fsdp_without_accumulation_ends_where_ddp_hooks_do(self):
        # K = 1, no micro_batch(): each reduce-scatter's shards are the all-reduce's slices,
        # under either contract (DESIGN §2.6), so FSDP2 ends where DDP under the hook does.
        self.assertEqual(self.digest(2, "fsdp exact 2x1"), self.digest(2, "ddp-hook 2x1"))
        fixed = self.digest(3, "fsdp fixed-order 3x1")
        self.assertEqual(fixed, self.digest(3, "ddp-hook fixed-order 3x1"))
        # ... and the fixed-order runs are not exact ones under another name.
        self.assertNotEqual(fixed, self.digest(3, "ddp-hook 3x1"))

    def test_fsdp1_with_its_hook_ends_where_ddp_does(self):
        # K = 1: FSDP1 (register_fsdp1, clipping over its flat shards) and DDP's exact_hook.
        self.assertEqual(self.digest(2, "fsdp1-hook 2x1"), self.digest(2, "ddp-hook 2x1"))

    def test_each_mutant_changes_the_digest(self):
        reference = self.digest(1, "single 1x8")
        for world, runs in OTHER_RUNS.items():
            for run in runs:
                if run["name"].startswith("mutant"):
                    self.assertNotEqual(self.digest(world, run["name"]), reference, run["name"])

    def test_bad_input_is_named_on_every_rank(self):
        expected = {"several-groups": ("InputError", "parameter groups"),
                    "float64": ("InputError", "torch.float64"),
                    "op-max": ("InputError", "MAX"),
                    "layouts-differ": ("WorldDisagreement", "rank(s) 1"),
                    "fixed-order-accumulation": ("InputError", "exact only"),
                    "premul-sum-0.3": ("InputError", "PREMUL_SUM(0.3)"),
                    "divide-factor-2.5": ("InputError", "set_gradient_divide_factor"),
                    "fsdp1-accumulation": ("InputError", "needs FSDP2"),
                    "micro-batch-missed": ("InputError", "second backward pass")}
        if not callable(torch.distributed.ReduceOp.PREMUL_SUM):  # torch 2.11: none to make
            del expected["premul-sum-0.3"]
        if "several-groups" not in self.results["errors"][0]["errors"]:  # 2.11: one group a module
            del expected["several-groups"]
        absent = self.results["errors"][0]["errors"]["peer-absent"]
        self.assertEqual(absent["raised"], "WorldTimeout", absent)
        self.assertIn("within 2 s", absent["message"])
        for rank, results in enumerate(self.results["errors"]):
            for case, (kind, words) in expected.items():
                outcome = results["errors"][case]
                self.assertEqual(outcome["raised"], kind, f"{case}, rank {rank}: {outcome}")
                self.assertIn(words, outcome["message"], f"{case}, rank {rank}")

    def test_each_shard_has_the_all_reduce_bits(self):
        # docs/DESIGN.md §2.6, on our comm as FSDP calls it: f32, bf16, f16; both contracts;
        # AVG, SUM, PREMUL_SUM; accumulation with a rank skipping a micro-batch.
        for rank, results in enumerate(self.results["errors"]):
            checks = dict(results["contract"])
            self.assertEqual(checks.pop("mixed precision: dtypes our comm reduced"),
                             ["torch.bfloat16"], f"rank {rank}")
            # 3 dtypes × 6 (AVG and SUM under both contracts, two accumulation checks), and
            # where torch can make one (2.13 on) 3 PREMUL_SUM checks a dtype: 18, or 27.
            premul = callable(torch.distributed.ReduceOp.PREMUL_SUM)
            self.assertEqual(len(checks), 27 if premul else 18)
            self.assertEqual({k: v for k, v in checks.items() if v}, {},
                             f"rank {rank}: elements that differ from the all-reduce's")

    def test_the_trail_sees_fsdp(self):
        # FSDP's trail (every reduce-scatter call a bucket, the full parameters each step)
        # audits equal to DDP's: the parameters agree at every step, the buckets differ.
        folder = self.folders[2]
        code, out, err = audit(folder / "fsdp.trail", folder / "ddp.trail")
        self.assertEqual(code, 0, out + err)
        self.assertIn("10 steps agree", out)
        # The wrong-shard mutant's run parts at step 0, at its first reduce-scatter.
        code, out, err = audit(folder / "fsdp.trail", folder / "wrong-shard.trail")
        self.assertEqual(code, 1, out + err)
        self.assertIn("step 0, bucket 0", out)
        print(f"\naudit of FSDP against its wrong-shard mutant: {out.splitlines()[0]}",
              file=sys.stderr)

    def test_the_recorder_sees_fsdp(self):
        # register(..., recorder=): steps 1 and 2 of the K = 1 runs, every reduce-scatter call
        # a bucket whose rank files are the ranks' whole inputs and whose result is their
        # shards concatenated; `reduce-verify replay` reduces the files again under the
        # recorded contract and finds every result (exit 0), and each rank's own shard digest
        # is the one the writer recorded for it.
        for world, run, name in ((2, "fsdp exact 2x1", "exact.recording"),
                                 (3, "fsdp fixed-order 3x1", "fixed-order.recording")):
            folder = self.folders[world] / name
            done = subprocess.run([TOOL, "replay", str(folder)], capture_output=True,
                                  text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            entries = [json.loads(line) for line in
                       (folder / "manifest.jsonl").read_text().splitlines()]
            buckets = [(e["step"], b["index"], b) for e in entries for b in e.get("buckets", [])]
            self.assertEqual({step for step, _, _ in buckets}, {1, 2}, name)
            self.assertTrue(all(b["coll"] == "reduce-scatter" for _, _, b in buckets), name)
            by_call = {(step, index): b for step, index, b in buckets}
            for rank, results in enumerate(self.results[world]):
                local = results[run]["recorded"]
                self.assertEqual(len(local), len(buckets), f"{name}, rank {rank}")
                for record in local:
                    bucket = by_call[(record["step"], record["bucket"])]
                    self.assertEqual(record["shard_digest"], bucket["shards"][rank])
                    self.assertEqual(record["input_digest"], bucket["inputs"][rank])
            print(f"\n{name}: {len(buckets)} reduce-scatter calls recorded, replay: "
                  f"{done.stdout.strip().splitlines()[-1]}", file=sys.stderr)

    def test_report_torch_own_paths(self):
        seen = {}
        for world, runs in DEFAULTS.items():
            for run in runs:
                outcomes = {json.dumps(ranks[run["name"]].get("digest") or
                                       ranks[run["name"]].get("failed"))
                            for ranks in self.results[world]}
                seen[run["name"]] = " / ".join(sorted(outcomes))
        digests = set(seen.values())
        print(f"\ntorch's own paths (reported, not asserted): {len(digests)} distinct outcomes "
              f"over {len(seen)} runs:\n" + "\n".join(f"  {k}: {v}" for k, v in seen.items()),
              file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
