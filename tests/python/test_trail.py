"""The digest trail (reduce_verify.Trail) and `reduce-verify audit` over real Gloo worlds.

Asserted, W = 2 (fixed_order_hook): two runs agree (exit 0); another bucket cap gives other
bucket layouts and the same parameters (exit 0, the layouts noted); one rank's batch perturbed
at step 2 is "compute upstream differs" at step 2 naming that rank (exit 1), and so is data
fed in another order (the ranks' batches swapped) at step 0; a run resumed
from a checkpoint of its trail head agrees with the uninterrupted one (exit 0).
W = 4: fixed_order_hook against torch's allreduce_hook (DDP's default all-reduce as a hook)
at the same bucket cap is "the reduction is not reproducible" at step 0, naming both hooks;
allreduce_hook at cap 25 MB against 0.1 MB: step 0 agrees (DDP's first backward reduces one
bucket either way), from step 1 the rebuilt buckets differ and so do the parameters after the
step: exit 1, "the bucket layouts differ" at step 1. A W = 2 trail against a W
= 4 one, a trail of another model (parameter count), an edited digest, swapped records, a dropped record, a truncated trail and an empty
file: exit 2 naming the file and record. The digest tree against xxh128sum (the independent
reference) and the test vectors of docs/DESIGN.md §12."""

import concurrent.futures
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import torch
except ImportError:
    print("torch is not installed (Debian: python3-torch): skipped")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(__file__))
import ddp_training  # noqa: E402
import trail_training  # noqa: E402
from reduce_verify import trail  # noqa: E402

TOOL = os.environ.get("REDUCE_VERIFY", "reduce-verify")
TINY = ddp_training.TINY_BUCKET_MB
# docs/DESIGN.md §12: the values 0.5 i − 3 (i = 0 … n−1) as float32.
TREE_VECTORS = {
    0: "2c0a8a99dc147d5445c3b49d035665b2",
    1: "4cc9408cc93d6d790b59d4ce1e193fdf",
    1024: "dc3d1ea93446b155b25180307ededacc",
    1025: "65e3954a623844e964c16c67e3953d71",
    40000: "5a0dd7727998be68e632474851609da0",
}


def vector_values(n):
    return torch.arange(n, dtype=torch.float32) * 0.5 - 3


def audit(a, b, *extra):
    done = subprocess.run([TOOL, "audit", str(a), str(b), *extra], capture_output=True,
                          text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def host_leaves(tensor):
    """The leaf digests of the tensor's tree, hashed on the host: what the GPU's leaves kernel
    writes, for the tests of the host half of the GPU path."""
    raw = tensor.numpy().tobytes()
    raw += bytes(-len(raw) % trail.TREE_LEAF_BYTES)
    return b"".join(trail.digest_bytes(raw[at:at + trail.TREE_LEAF_BYTES])
                    for at in range(0, len(raw), trail.TREE_LEAF_BYTES))


class DigestTree(unittest.TestCase):
    def xxh128sum(self, data, directory):
        path = pathlib.Path(directory) / "bytes"
        path.write_bytes(data)
        out = subprocess.run(["xxh128sum", str(path)], capture_output=True, text=True, check=True)
        return bytes.fromhex(out.stdout.split()[0])

    def test_tree_is_its_spec_and_the_vectors(self):
        if shutil.which("xxh128sum") is None:
            self.skipTest("xxh128sum (Debian: xxhash) is not installed")
        with tempfile.TemporaryDirectory() as directory:
            for n, expected in TREE_VECTORS.items():
                raw = vector_values(n).numpy().tobytes()
                padded = raw + bytes(-len(raw) % trail.TREE_LEAF_BYTES)
                leaves = [self.xxh128sum(padded[at:at + trail.TREE_LEAF_BYTES], directory)
                          for at in range(0, len(padded), trail.TREE_LEAF_BYTES)]
                reference = self.xxh128sum(len(raw).to_bytes(8, "little") + b"".join(leaves),
                                           directory)
                self.assertEqual(trail.tree_digest(vector_values(n)), reference, n)
                self.assertEqual(reference.hex(), expected, n)
                self.assertEqual(trail.flat_digest(vector_values(n)), self.xxh128sum(raw,
                                                                                     directory))

    def test_pending_trees_finish_to_the_reference(self):
        # The GPU path's host half: leaf digests (here hashed on the host) finished into roots.
        values = [vector_values(n) for n in (0, 1, 40000)]
        pending = []
        for tensor in values:
            leaves = host_leaves(tensor)
            pending.append(trail.PendingTree(tensor.numel() * 4,
                                             torch.frombuffer(bytearray(leaves) or bytearray(1),
                                                              dtype=torch.uint8)[:len(leaves)]))
        finished = trail.finish_trees([b"k" * 16] + pending)
        self.assertEqual(finished[0], b"k" * 16)
        self.assertEqual(finished[1:], [trail.tree_digest(t) for t in values])

    def test_a_deferred_step_finishes_on_the_worker_to_the_reference(self):
        # A GPU step's roots are hashed on the trail's worker thread from its step copy's host
        # buffer (a slot for u64_le(size), which root() fills, then the leaves, tree after
        # tree); here the copy is a host one.
        values = [vector_values(n) for n in (0, 1, 40000, 1025)]
        layout, trees = bytearray(), []
        for tensor in values:
            leaves = host_leaves(tensor)
            tree = trail.PendingTree(tensor.numel() * 4,
                                     torch.zeros(len(leaves), dtype=torch.uint8))
            tree.at = len(layout)
            layout += b"\xa5" * 8 + leaves  # the size slot: root() writes u64_le(size)
            trees.append(tree)

        class HostCopy:
            host = torch.frombuffer(layout, dtype=torch.uint8)
            waits = 0

            def wait(self):
                HostCopy.waits += 1

        for tree in trees:
            tree.copy = HostCopy()
        step = trail._StepDigests(0, [], [b"k" * 16] + trees, 0, False)
        self.assertTrue(step.deferred)
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as worker:
            step.start(worker)
            finished = step.finish()
        self.assertEqual(finished[0], b"k" * 16)
        self.assertEqual(finished[1:], [trail.tree_digest(t) for t in values])
        self.assertEqual(HostCopy.waits, len(trees))

    def test_a_leaf_arena_hands_out_disjoint_slots_until_full(self):
        arena = trail.LeafArena(torch.device("cpu"), 8 + 32 + 8 + 16 + 15)
        self.assertEqual(arena.take(32), 0)  # a size slot, then two leaves
        self.assertEqual(arena.take(16), 40)
        self.assertIsNone(arena.take(16))  # 15 bytes left: the tree gets its own tensor
        self.assertEqual(arena.take(0), 64)  # an empty tree: its size slot alone
        self.assertEqual(arena.used, 72)

    def test_chain_vector_shared_with_the_audit(self):
        # tests/audit/trail_file_test.cc holds the same value.
        self.assertEqual(trail.chain_next("0" * 32, "{}"), "dfc4d59336482af3b256d9f5b0c649d6")


class TrailWorlds(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        trail_training.prepare_forkserver()
        cls.directory = tempfile.TemporaryDirectory()
        base = pathlib.Path(cls.directory.name)
        started = time.monotonic()
        cls.w2 = trail_training.run_world(2, [
            {"name": "fixed-a", "hook": "fixed-order", "bucket_cap_mb": 25},
            {"name": "fixed-b", "hook": "fixed-order", "bucket_cap_mb": 25},
            {"name": "fixed-tiny", "hook": "fixed-order", "bucket_cap_mb": TINY},
            {"name": "perturbed", "hook": "fixed-order", "bucket_cap_mb": 25, "perturb": [2, 1]},
            {"name": "resumed", "hook": "fixed-order", "bucket_cap_mb": 25, "resume_at": 2},
            {"name": "permuted", "hook": "fixed-order", "bucket_cap_mb": 25,
             "permute_data": True},
        ], base / "w2")
        cls.w4 = trail_training.run_world(4, [
            {"name": "fixed-25", "hook": "fixed-order", "bucket_cap_mb": 25},
            {"name": "default-25", "hook": "allreduce", "bucket_cap_mb": 25},
            {"name": "default-tiny", "hook": "allreduce", "bucket_cap_mb": TINY},
        ], base / "w4")
        print(f"training worlds: {time.monotonic() - started:.1f} s", file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.directory.cleanup()

    def copy(self, name, lines):
        path = pathlib.Path(self.directory.name) / name
        path.write_text("".join(lines))
        return path

    def lines(self):
        return self.w2["fixed-a"].read_text().splitlines(keepends=True)

    def test_same_training_under_fixed_order_agrees(self):
        code, out, err = audit(self.w2["fixed-a"], self.w2["fixed-b"])
        self.assertEqual(code, 0, out + err)
        self.assertIn("4 steps agree", out)

    def test_another_bucket_cap_under_fixed_order_agrees_layouts_noted(self):
        code, out, err = audit(self.w2["fixed-a"], self.w2["fixed-tiny"])
        self.assertEqual(code, 0, out + err)
        self.assertIn("the bucket layouts differ from step", out)

    def test_a_perturbed_rank_is_compute_upstream_at_its_step_and_rank(self):
        code, out, err = audit(self.w2["fixed-a"], self.w2["perturbed"])
        self.assertEqual(code, 1, out + err)
        self.assertIn("step 2, bucket 0", out)
        self.assertIn("rank 1: compute upstream differs", out)
        self.assertIn("record step 2 in full", out)

    def test_data_fed_in_another_order_is_compute_upstream_at_step_0(self):
        code, out, err = audit(self.w2["fixed-a"], self.w2["permuted"])
        self.assertEqual(code, 1, out + err)
        self.assertIn("step 0, bucket 0", out)
        self.assertIn("rank 0: compute upstream differs", out)
        self.assertIn("(2 of 2 ranks' inputs differ in this bucket)", out)

    def test_a_resumed_run_agrees_with_the_uninterrupted_one(self):
        code, out, err = audit(self.w2["fixed-a"], self.w2["resumed"])
        self.assertEqual(code, 0, out + err)
        self.assertEqual(len(self.w2["resumed"].read_text().splitlines()), 6)  # lost step cut

    def test_fixed_order_against_allreduce_hook_is_the_reduction(self):
        report = pathlib.Path(self.directory.name) / "report.json"
        code, out, err = audit(self.w4["fixed-25"], self.w4["default-25"], "--json", str(report))
        self.assertEqual(code, 1, out + err)
        self.assertIn("step 0, bucket 0", out)
        self.assertIn("the reduction is not reproducible", out)
        self.assertIn("A reduce_verify.ddp.hooks.fixed_order_hook; B torch.distributed."
                      "algorithms.ddp_comm_hooks.default_hooks.allreduce_hook", out)
        verdict = json.loads(report.read_text())
        self.assertEqual((verdict["verdict"], verdict["step"], verdict["bucket"]), ("part", 0, 0))

    def test_default_allreduce_under_another_bucket_cap_parts_by_layout(self):
        # W = 4: the ring all-reduce's order of addition depends on where an element falls in
        # its bucket, so other layouts move the bits. Step 0 reduces one bucket either way
        # (DDP rebuilds its buckets after the first backward); from step 1 the layouts differ
        # and the bucket digests cannot be compared: the parameters part.
        code, out, err = audit(self.w4["default-25"], self.w4["default-tiny"])
        self.assertEqual(code, 1, out + err)
        self.assertIn("step 1 (parameters, rank 0): the bucket layouts differ", out)

    def test_trails_of_other_worlds_do_not_line_up(self):
        code, out, err = audit(self.w2["fixed-a"], self.w4["fixed-25"])
        self.assertEqual(code, 2, out + err)
        self.assertIn("is a world of 2", err)

    def test_an_edited_digest_is_named_by_its_record(self):
        lines = self.lines()
        at = lines[2].index('"inputs":["') + 11
        lines[2] = lines[2][:at] + ("1" if lines[2][at] == "0" else "0") + lines[2][at + 1:]
        code, out, err = audit(self.w2["fixed-a"], self.copy("edited.jsonl", lines))
        self.assertEqual(code, 2, out + err)
        self.assertIn("edited.jsonl:3: the chain is broken", err)

    def test_swapped_and_dropped_records_are_named(self):
        lines = self.lines()
        swapped = lines[:2] + [lines[3], lines[2]] + lines[4:]
        code, _, err = audit(self.w2["fixed-a"], self.copy("swapped.jsonl", swapped))
        self.assertEqual(code, 2, err)
        self.assertIn("swapped.jsonl:3: the chain is broken", err)
        code, _, err = audit(self.copy("dropped.jsonl", lines[:2] + lines[3:]), self.w2["fixed-a"])
        self.assertEqual(code, 2, err)
        self.assertIn("dropped.jsonl:3: the chain is broken", err)

    def test_a_truncated_trail_is_named(self):
        code, _, err = audit(self.w2["fixed-a"], self.copy("cut.jsonl", self.lines()[:4]))
        self.assertEqual(code, 2, err)
        self.assertIn("cut.jsonl ends at step 2 (record 4, without an end record", err)

    def test_a_torn_last_record_is_named_and_the_rest_audited(self):
        torn = self.lines()[:4] + [self.lines()[4][:50]]
        code, out, err = audit(self.copy("torn-a.jsonl", torn), self.copy("torn-b.jsonl", torn))
        self.assertEqual(code, 0, out + err)
        self.assertIn("torn-a.jsonl:5: a torn last record", err)
        self.assertIn("3 steps agree", out)

    def test_a_trail_of_another_model_does_not_line_up(self):
        # The header re-chained with another parameter count: a valid trail of another model.
        head, lines = trail.GENESIS, []
        for number, line in enumerate(self.lines()):
            record = json.loads(line)
            del record["chain"]
            if number == 0:
                self.assertEqual(record["parameters"], 794884)
                record["parameters"] += 1
            text, head = trail.chained_line(head, record)
            lines.append(text + "\n")
        code, _, err = audit(self.w2["fixed-a"], self.copy("other-model.jsonl", lines))
        self.assertEqual(code, 2, err)
        self.assertIn("different models", err)

    def test_an_empty_trail_is_bad_input(self):
        code, _, err = audit(self.copy("empty.jsonl", []), self.w2["fixed-a"])
        self.assertEqual(code, 2, err)
        self.assertIn("empty.jsonl: an empty trail", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
