"""python/bench/ddp_hook_overhead.py's logic, on the CPU: a smoke run over a real Gloo world
of two processes (--device cpu --processes 2, a tiny model), the path the multi-GPU proof
takes with NCCL (ci/device/multi-gpu-proof.sh), so that script cannot rot unseen. Its step
times are no figures; asserted are the report's shape and that every bucket recorded in the
two-rank world replays to the same digest on the host and through `reduce-verify digest`."""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

try:
    import torch  # noqa: F401
except ImportError:
    print("torch is not installed (Debian: python3-torch): skipped")
    sys.exit(77)

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "python" / "bench" / "ddp_hook_overhead.py"
HOOKS = ("ddp_default", "allreduce_hook", "fixed_order_hook", "exact_hook")


class DdpBenchmarkSmoke(unittest.TestCase):
    def test_a_two_process_world_records_and_replays(self):
        tool = os.environ.get("REDUCE_VERIFY")
        self.assertTrue(tool, "REDUCE_VERIFY names the CLI (CTest sets it)")
        with tempfile.TemporaryDirectory(prefix="rv-ddp-bench-smoke-") as out:
            done = subprocess.run(
                [sys.executable, str(SCRIPT), "--device", "cpu", "--processes", "2",
                 "--width", "128", "--depth", "2", "--batches", "16", "--rounds", "1",
                 "--steps", "2", "--warmup", "1", "--out", out, "--tool", tool],
                capture_output=True, text=True, timeout=240,
                env=dict(os.environ, GLOO_SOCKET_IFNAME="lo"))
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            report = json.loads((pathlib.Path(out) / "ddp-hook-overhead.json").read_text())
        self.assertEqual(report["world"], 2)
        self.assertNotIn("logical_replay", report)  # one device's section, not a world's
        (entry,) = report["overhead"]
        self.assertEqual(entry["world"], 2)
        self.assertEqual(len(entry["median_ms_per_rank"]), 2)
        for rank_medians in entry["median_ms_per_rank"]:
            self.assertEqual(sorted(rank_medians), sorted(HOOKS))
        recorded = report["recorded"]
        self.assertEqual({row["hook"] for row in recorded}, {"fixed_order_hook", "exact_hook"})
        for row in recorded:
            self.assertEqual(row["world"], 2)
            self.assertEqual(row["gpu_digest"], row["host_digest"], row)
            self.assertEqual(row["gpu_digest"], row["tool_digest"], row)
        self.assertTrue(report["all_replays_agree"])


if __name__ == "__main__":
    unittest.main()
