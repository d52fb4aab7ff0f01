"""The trail's stream ordering on one GPU (docs/DESIGN.md §12, *Streams*): a short DDP run's
trail against the host reference's digests of the same run (python/bench/trail_overhead.py's
reference_check: every bucket's input and result and the parameters, under allreduce_hook,
fixed_order_hook and a hook that halves the bucket in place), with every trail digest delayed
about a millisecond on the GPU so that a missing wait shows. And the mutant that check must
catch: the future the trail hands DDP completed with no CUDA event (DDP then uses a bucket's
result before the hook's work on the side stream is done). Exits 77 (skipped) without torch,
CUDA or a CUDA build of the library."""

import os
import pathlib
import sys
import tempfile
import unittest

try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("torch is not installed: skipped")
    sys.exit(77)

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "python" / "bench"))
import reduce_verify  # noqa: E402
from reduce_verify import trail as trail_module  # noqa: E402
import trail_overhead  # noqa: E402


class TrailStreams(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.device = torch.device("cuda", 0)
        torch.cuda.set_device(cls.device)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
        dist.init_process_group("nccl", rank=0, world_size=1)

    @classmethod
    def tearDownClass(cls):
        dist.destroy_process_group()

    def check(self):
        with tempfile.TemporaryDirectory() as scratch:
            return trail_overhead.reference_check(self.device, scratch)

    def test_every_record_is_the_host_references(self):
        rows = self.check()
        self.assertEqual(len(rows), 9)  # three hooks, three steps
        self.assertTrue(all(row["agree"] for row in rows), rows)

    def test_a_future_without_the_side_streams_event_is_caught(self):
        original = trail_module._side_future
        # The mutant: a plain future, whose completion records no CUDA event.
        trail_module._side_future = lambda device: torch.futures.Future()
        try:
            rows = self.check()
        finally:
            trail_module._side_future = original
        self.assertFalse(all(row["agree"] for row in rows),
                         "the mutant went unnoticed: the check cannot see a missing wait")


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("no CUDA device: skipped")
        sys.exit(77)
    try:
        if trail_module._cuda_leaf_function() is None:
            print("the library was built without CUDA: skipped")
            sys.exit(77)
    except reduce_verify.LibraryNotFound as error:
        print(f"{error}: skipped")
        sys.exit(77)
    unittest.main()
