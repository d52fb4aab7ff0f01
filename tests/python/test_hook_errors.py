"""The hooks on hand-made buckets in a world of two: a bucket whose length is not a multiple
of W reduces like the core does in one process; a world that disagrees (length, op, contract)
raises WorldDisagreement on every rank naming who has what; bfloat16 and float16 buckets reduce
like the core too, written back in their dtype; a float64 bucket, mixed devices,
a float64 DDP model and a wrong state raise InputError naming the cause, catchable as that
class through register() or HookState.original_errors(); a rank on DDP's default hook is
named within the hook's own deadline; the Recorder counts optimizer steps under gradient
accumulation and warns about the steps it never saw."""

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
        cls.default_hook = hook_world.run_default_hook_world(cls.temp.name)

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def on_every_rank(self, case):
        return [results[case] for results in self.ranks]

    def test_padded_buckets_reduce_like_the_core(self):
        for case in ("fixed-padded", "exact-padded", "fixed-padded-torch.bfloat16",
                     "exact-padded-torch.bfloat16", "fixed-padded-torch.float16",
                     "exact-padded-torch.float16"):
            for result in self.on_every_rank(case):
                self.assertTrue(result["ok"], result)
                got, expected = result["value"]
                self.assertEqual(got, expected, case)

    def test_a_world_that_disagrees_is_named_on_every_rank(self):
        for case, pattern in (("dtype-disagrees", r"dtype \(rank\(s\) 0: f32; rank\(s\) 1: bf16\)"),
                              ("length-disagrees", r"bucket length \(rank\(s\) 0: 100; "
                                                    r"rank\(s\) 1: 101\)"),
                              ("op-disagrees", r"op \(rank\(s\) 0: mean; rank\(s\) 1: sum\)"),
                              ("contract-disagrees", r"contract \(rank\(s\) 0: exact; "
                                                     r"rank\(s\) 1: fixed-order\)")):
            for result in self.on_every_rank(case):
                self.assertFalse(result["ok"], case)
                self.assertEqual(result["type"], "WorldDisagreement", result)
                self.assertRegex(result["message"], pattern)
                # Only what differs is named: every rank here runs a reduce_verify hook.
                self.assertNotIn("magic", result["message"])
                self.assertNotIn("not running", result["message"])

    def test_a_record_from_a_stranger_is_named(self):
        from reduce_verify.ddp import agreement
        ours = [agreement._MAGIC, 1, 1, 2, 8, 0, 3, 0, 0]
        message = agreement.describe([ours, [7] * len(ours)], index=0, step=3)
        self.assertRegex(message, r"rank\(s\) 1 sent no reduce_verify record")

    def test_a_rank_on_ddps_default_hook_is_named_within_the_deadline(self):
        ours, default = self.default_hook
        self.assertFalse(ours["ok"], ours)
        self.assertEqual(ours["type"], "WorldTimeout", ours)
        self.assertRegex(ours["message"], r"bucket 0 of step 0 .* deadline of 2 s")
        self.assertLess(ours["seconds"], 10, ours)  # the process group's timeout here: 60 s
        self.assertFalse(default["ok"], default)    # its all-reduce lost its peer
        print(f"\n[default hook: rank 0 named it after {ours['seconds']:.1f} s; rank 1: "
              f"{default['message'][:80]!r} after {default['seconds']:.1f} s]", file=sys.stderr)

    def test_bad_buckets_are_named(self):
        for case, pattern in (("float64-bucket", "torch.float64"),
                              ("mixed-devices", r"mixes devices \(cpu, meta\)"),
                              ("bad-state", "HookState"),
                              ("float64-ddp", "torch.float64")):
            for result in self.on_every_rank(case):
                self.assertFalse(result["ok"], case)
                self.assertRegex(result["message"], pattern)

    def test_errors_can_be_caught_as_their_class(self):
        # Inside backward() torch 1.13 re-raises a hook's exception as a RuntimeError (torch
        # 2.11 on the H200 kept the hook's own class: either way it names the dtype) ...
        for result in self.on_every_rank("float64-ddp"):
            self.assertIn(result["type"], ("RuntimeError", "InputError"), result)
            self.assertRegex(result["message"], "torch.float64")
        # ... which HookState.original_errors() turns back into the hook's own exception,
        for result in self.on_every_rank("float64-ddp-original-errors"):
            self.assertEqual(result["type"], "InputError", result)
            self.assertRegex(result["message"], "torch.float64")
        # and register() refuses before any backward pass, as the class it is.
        for case, kind, pattern in (("register-float64", "InputError",
                                     r"2 parameter\(s\) are not torch.float32, torch.bfloat16 "
                                     r"or torch.float16: weight "
                                     r"\(torch.float64\), bias \(torch.float64\)"),
                                    ("register-bad-state", "InputError", "HookState")):
            for result in self.on_every_rank(case):
                self.assertEqual(result["type"], kind, result)
                self.assertRegex(result["message"], pattern)

    def test_the_recorder_counts_optimizer_steps_and_names_the_ones_it_never_saw(self):
        for rank, result in enumerate(self.on_every_rank("recorder")):
            self.assertTrue(result["ok"], result)
            seen = result["value"]
            self.assertEqual(seen["recorded"], [19])
            warned = "\n".join(seen["warnings"])
            self.assertRegex(warned, r"step 0 took 2 forward passes")
            self.assertRegex(warned, r"step\(s\) 20, 39 never recorded: the hook saw 20 "
                                     r"synchronised backward pass\(es\) \(steps 0 to 19\)")
            self.assertIn("steps=[19, 20, 39]", seen["repr"])
            if rank == 0:  # the second Recorder appended to the first one's manifest
                self.assertEqual(seen["manifest"], [[19, "fixed-order"], [0, "exact"]])

    def test_the_world_survives_the_refusals(self):
        digests = [result["value"] for result in self.on_every_rank("after")]
        self.assertEqual(len(set(digests)), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
