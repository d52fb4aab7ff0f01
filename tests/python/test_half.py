"""bfloat16 and float16 through the package (docs/DESIGN.md §2.5): the digest is XXH3-128 of
the dtype's own bytes; reduce() equals a reference written here in Python (fixed-order: the
widened rows folded in float32, rounded once by torch's own conversion; exact: the sum in
fractions, rounded once to the nearest value of the dtype); the hooks over a 2-rank Gloo DDP
give one digest on both ranks, equal to a single-process replay, with the result in the
bucket's dtype; the Recorder writes the dtype's raw bytes, "dtype" and `--dtype` in the
replays, and `reduce-verify replay` verifies its recordings; the exact accumulator rounds to
bfloat16 once; float64 is refused by name."""

import bisect
import ctypes
import fractions
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import torch
except ImportError:
    print("torch is not installed (Debian: python3-torch): skipped")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(__file__))
import half_world  # noqa: E402
import reduce_verify  # noqa: E402
from reduce_verify import _library  # noqa: E402

DTYPES = (torch.bfloat16, torch.float16)
NAMES = {torch.bfloat16: "bf16", torch.float16: "f16"}


def bits_of(tensor):
    return tensor.contiguous().view(torch.int16).to(torch.int32).bitwise_and(0xFFFF).tolist()


def half_table(dtype, world, n, seed):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(world, n, generator=generator) * 8).to(dtype)


class Nearest:
    """Rounds a fraction to the nearest value of a half dtype, ties to the even pattern: every
    non-negative finite value of the format, and 2^(emax + 1) standing for Inf (even, so that
    the overflow threshold, the midpoint above the largest value, rounds to it)."""

    def __init__(self, dtype):
        inf_bits = 0x7F80 if dtype == torch.bfloat16 else 0x7C00
        patterns = torch.arange(0, inf_bits, dtype=torch.int32).to(torch.int16).view(dtype)
        self.values = [fractions.Fraction(v) for v in patterns.float().tolist()]
        self.values.append(fractions.Fraction(2) ** (128 if dtype == torch.bfloat16 else 16))
        self.bits = list(range(inf_bits + 1))

    def __call__(self, q):
        sign = 0x8000 if q < 0 else 0
        q = abs(q)
        i = bisect.bisect_left(self.values, q)
        if i == len(self.values) - 1 and q >= self.values[-1]:
            return sign | self.bits[-1]
        if self.values[i] == q:
            return sign | self.bits[i]
        lo, hi = i - 1, i
        below, above = q - self.values[lo], self.values[hi] - q
        pick = lo if below < above or (below == above and self.bits[lo] % 2 == 0) else hi
        return sign | self.bits[pick]


def exact_reference(stacked, op):
    nearest = Nearest(stacked.dtype)
    world = stacked.shape[0]
    columns = stacked.float().t().tolist()
    out = []
    for column in columns:
        q = sum(fractions.Fraction(v) for v in column)
        out.append(nearest(q / world if op == "mean" else q))
    return out


def fixed_reference(stacked, op):
    acc = stacked[0].float()
    for row in stacked[1:]:
        acc = acc + row.float()  # binary32, ascending rank order
    if op == "mean":
        acc = acc * torch.tensor(1.0 / stacked.shape[0], dtype=torch.float32)
    return bits_of(acc.to(stacked.dtype))  # torch rounds to nearest even: the one rounding


class Tensors(unittest.TestCase):
    def test_digest_is_xxh128_of_the_dtypes_bytes(self):
        for dtype in DTYPES:
            values = half_table(dtype, 1, 1001, 3)[0]
            raw = ctypes.string_at(values.data_ptr(), values.numel() * 2)
            # The same 2002 bytes read as 4-byte floats where they divide (the C ABI's binary32
            # digest hashes its bytes as they are): another entry point, the same hash.
            even = values[:1000]
            self.assertEqual(reduce_verify.digest(even), reduce_verify.digest(even.view(torch.float32)))
            xxh128sum = shutil.which("xxh128sum")
            if xxh128sum:
                with tempfile.TemporaryDirectory() as folder:
                    path = pathlib.Path(folder) / f"values.{NAMES[dtype]}"
                    path.write_bytes(raw)
                    done = subprocess.run([xxh128sum, str(path)], capture_output=True, text=True,
                                          check=True)
                    self.assertEqual(reduce_verify.digest(values), done.stdout.split()[0])
            self.assertNotEqual(reduce_verify.digest(values), reduce_verify.digest(values.float()))

    def test_reductions_equal_the_python_references(self):
        for dtype in DTYPES:
            for world, n in ((1, 7), (2, 1500), (3, 2049)):
                stacked = half_table(dtype, world, n, world)
                for op in ("sum", "mean"):
                    with self.subTest(dtype=dtype, world=world, op=op):
                        fixed = reduce_verify.reduce(stacked, op, "fixed-order")
                        exact = reduce_verify.reduce(stacked, op, "exact")
                        self.assertEqual(fixed.dtype, dtype)
                        self.assertEqual(exact.dtype, dtype)
                        self.assertEqual(bits_of(fixed), fixed_reference(stacked, op))
                        self.assertEqual(bits_of(exact), exact_reference(stacked, op))

    def test_exact_rounds_once_to_the_dtype(self):
        # 1 + 2^-8 + 2^-40: just above the bfloat16 midpoint 1 + 2^-8; through binary32 it
        # would be the midpoint itself, rounded to even, 1.
        stacked = torch.tensor([[1.0], [2.0 ** -8], [2.0 ** -40]]).to(torch.bfloat16)
        self.assertEqual(reduce_verify.reduce(stacked, "sum", "exact").item(), 1 + 2.0 ** -7)
        self.assertEqual(reduce_verify.reduce(stacked, "sum", "fixed-order").item(), 1.0)

    def test_other_dtypes_are_refused_by_name(self):
        for dtype in (torch.float64, torch.int32):
            with self.assertRaisesRegex(reduce_verify.InputError, str(dtype)):
                reduce_verify.reduce(torch.zeros(2, 3, dtype=dtype))
            with self.assertRaisesRegex(reduce_verify.InputError, str(dtype)):
                reduce_verify.digest(torch.zeros(3, dtype=dtype))
        from reduce_verify.tensors import reduce_stacked_into
        with self.assertRaisesRegex(reduce_verify.InputError, "output torch.float32"):
            reduce_stacked_into(torch.zeros(2, 4, dtype=torch.bfloat16), 2, 4, 4, "sum",
                                "exact", torch.zeros(4))
        lib = _library.library()
        table = torch.zeros(2, 4, dtype=torch.bfloat16)
        self.assertEqual(lib.rv_fixed_order_reduce_stacked_dtype(table.data_ptr(), 2, 4, 4, 0, 5,
                                                                 table.data_ptr()), 1)
        self.assertIn("dtype 5", lib.rv_last_error().decode())


class HalfWorld(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory(prefix="rv-half-")
        cls.root = pathlib.Path(cls.temp.name)
        cls.ranks = half_world.run(cls.root)

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def test_hooks_agree_on_every_rank_and_with_the_replay(self):
        for index, config in enumerate(half_world.CONFIGS):
            with self.subTest(config=config["name"]):
                got = [rank["train"][index] for rank in self.ranks]
                self.assertEqual(got[0]["name"], config["name"])
                self.assertEqual(got[0]["digest"], got[1]["digest"])
                self.assertEqual(got[0]["grad_dtype"], str(half_world.DTYPES[config["dtype"]]))
                self.assertEqual(got[0]["digest"], half_world.replay(config))

    def test_recordings_hold_the_dtypes_bytes_and_reduce_as_there(self):
        for config in half_world.CONFIGS:
            dtype = half_world.DTYPES[config["dtype"]]
            folder = self.root / f"recording-{config['name']}"
            entries = reduce_verify.read_manifest(folder)
            self.assertGreaterEqual(len(entries), 1)
            tool = os.environ.get("REDUCE_VERIFY")
            if tool:  # the whole recording verifies itself, files and results
                done = subprocess.run([tool, "replay", str(folder)], capture_output=True,
                                      text=True, timeout=120)
                self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
                self.assertIn(f"{len(entries)} verified, 0 failed", done.stdout)
            for entry in entries:
                with self.subTest(config=config["name"], bucket=entry["bucket"]):
                    self.assertEqual(entry["dtype"], config["dtype"])
                    self.assertEqual(entry["step"], half_world.RECORD_STEP)
                    self.assertTrue(all(f.endswith("." + config["dtype"])
                                        for f in entry["inputs"]))
                    self.assertTrue(all(f"--dtype {config['dtype']}" in c
                                        for c in entry["replay"]), entry["replay"])
                    raw = [(folder / f).read_bytes() for f in entry["inputs"]]
                    self.assertEqual({len(r) for r in raw}, {2 * entry["count"]})
                    stacked = torch.stack([torch.frombuffer(bytearray(r), dtype=dtype)
                                           for r in raw])
                    self.assertEqual([reduce_verify.digest(row) for row in stacked],
                                     entry["input_digests"])
                    reference = (fixed_reference(stacked, entry["op"])
                                 if entry["contract"] == "fixed-order"
                                 else exact_reference(stacked, entry["op"]))
                    as_tensor = torch.tensor(reference, dtype=torch.int32).to(torch.int16)
                    self.assertEqual(reduce_verify.digest(as_tensor.view(dtype)),
                                     entry["result_digest"])
                    # The manifest's replay line, through the command-line tool: its
                    # first token is the recorded result's digest.
                    tool = os.environ.get("REDUCE_VERIFY")
                    if tool:
                        replay = entry["replay"][0].replace("reduce-verify", shlex.quote(tool), 1)
                        done = subprocess.run(replay, shell=True, cwd=folder, text=True,
                                              capture_output=True, timeout=120)
                        self.assertEqual(done.returncode, 0, done.stderr)
                        self.assertEqual(done.stdout.split()[0], entry["result_digest"], replay)
                    for rank in self.ranks:
                        index = next(i for i, c in enumerate(half_world.CONFIGS)
                                     if c["name"] == config["name"])
                        local = next(e for e in rank["train"][index]["recorded"]
                                     if e["bucket"] == entry["bucket"])
                        self.assertEqual(local["result_digest"], entry["result_digest"])

    def test_the_accumulator_rounds_the_mean_once_to_bfloat16(self):
        got = [rank["accumulate"] for rank in self.ranks]
        self.assertEqual(got[0], got[1])
        self.assertEqual(got[0]["total"], 3)
        self.assertEqual(got[0]["dtype"], "torch.bfloat16")
        # The three micro-batches' gradients in one process: their exact mean over W = 3.
        model = half_world.Elementwise(torch.bfloat16)
        rows = []
        for micro_batch in range(3):
            model.zero_grad(set_to_none=True)
            half_world.loss_of(model, 0, micro_batch, torch.bfloat16).backward()
            rows.append(half_world.flat([model.w.grad, model.b.grad]))
        expected = reduce_verify.reduce(torch.stack(rows), "mean", "exact")
        self.assertEqual(got[0]["digest"], reduce_verify.digest(expected))

    def test_the_accumulator_refuses_float64_by_name(self):
        model = torch.nn.Linear(3, 2).double()
        model(torch.ones(1, 3, dtype=torch.float64)).sum().backward()
        with self.assertRaisesRegex(reduce_verify.InputError, "torch.float64"):
            reduce_verify.ExactGradAccumulator(model).add()


if __name__ == "__main__":
    unittest.main(verbosity=2)
