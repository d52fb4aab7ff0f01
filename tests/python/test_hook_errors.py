"""The hooks on hand-made buckets in a world of two: a bucket whose length is not a multiple
of W reduces like the core does in one process; a world that disagrees (length, op, contract)
raises WorldDisagreement on every rank naming who has what; a float16 bucket, mixed devices,
a float64 DDP model and a wrong state raise InputError naming the cause."""

import os
import sys
import tempfile
import unittest

try:
    import torch  # noqa: F401
except ImportError:
    print("torch is not installed (Debian: python3-torch): skipped")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(__file__))
import hook_world  # noqa: E402


class HookErrors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory(prefix="rv-hook-")
        cls.ranks = hook_world.run(cls.temp.name)

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def on_every_rank(self, case):
        return [results[case] for results in self.ranks]

    def test_padded_buckets_reduce_like_the_core(self):
        for case in ("fixed-padded", "exact-padded"):
            for result in self.on_every_rank(case):
                self.assertTrue(result["ok"], result)
                got, expected = result["value"]
                self.assertEqual(got, expected, case)

    def test_a_world_that_disagrees_is_named_on_every_rank(self):
        for case, pattern in (("length-disagrees", r"bucket length \(rank\(s\) 0: 100; "
                                                    r"rank\(s\) 1: 101\)"),
                              ("op-disagrees", r"op \(rank\(s\) 0: mean; rank\(s\) 1: sum\)"),
                              ("contract-disagrees", r"contract \(rank\(s\) 0: exact; "
                                                     r"rank\(s\) 1: fixed-order\)")):
            for result in self.on_every_rank(case):
                self.assertFalse(result["ok"], case)
                self.assertEqual(result["type"], "WorldDisagreement", result)
                self.assertRegex(result["message"], pattern)

    def test_bad_buckets_are_named(self):
        for case, pattern in (("float16-bucket", "torch.float16"),
                              ("mixed-devices", r"mixes devices \(cpu, meta\)"),
                              ("bad-state", "HookState"),
                              ("float64-ddp", "torch.float64")):
            for result in self.on_every_rank(case):
                self.assertFalse(result["ok"], case)
                self.assertRegex(result["message"], pattern)

    def test_the_world_survives_the_refusals(self):
        digests = [result["value"] for result in self.on_every_rank("after")]
        self.assertEqual(len(set(digests)), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
