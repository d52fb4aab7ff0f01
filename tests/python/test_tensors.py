"""reduce_verify's tensor functions and the C ABI under them, against the reduce-verify tool:
the digest and both contracts' reductions print what `reduce-verify digest --inputs` prints for
the same bytes; bad input raises an exception naming its cause."""

import ctypes
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    import torch
except ImportError:
    print("torch is not installed (Debian: python3-torch): skipped")
    sys.exit(77)

import reduce_verify
from reduce_verify import _library

TOOL = os.path.abspath(os.environ.get("REDUCE_VERIFY", "reduce-verify")) \
    if os.sep in os.environ.get("REDUCE_VERIFY", "") else "reduce-verify"


def floats_from_bits(bits):
    return torch.tensor([struct.unpack("<f", struct.pack("<I", b))[0] for b in bits],
                        dtype=torch.float32)


def special_values():
    """±0, ±Inf, NaNs with payloads, subnormals, the largest finite values, ordinary values."""
    return floats_from_bits([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00001,
                             0xFFA00000, 0x00000001, 0x80000003, 0x007FFFFF, 0x7F7FFFFF,
                             0xFF7FFFFF, 0x3F800000, 0xBF800001, 0x4B800000, 0x33800000])


def table(world, n, seed):
    generator = torch.Generator().manual_seed(seed)
    scale = torch.pow(2.0, torch.randint(-30, 30, (world, n), generator=generator).float())
    values = torch.randn(world, n, generator=generator) * scale
    specials = special_values()
    for r in range(world):  # each rank gets the special values at shifted places
        index = torch.arange(len(specials)) * 7 + r
        values[r, index[index < n]] = specials[: int((index < n).sum())]
    return values


def write_inputs(folder, stacked):
    files = []
    for r, row in enumerate(stacked):
        path = pathlib.Path(folder) / f"rank{r}.f32"
        path.write_bytes(ctypes.string_at(row.contiguous().data_ptr(), row.numel() * 4))
        files.append(str(path))
    return files


def tool_digest(files, op, contract):
    command = [TOOL, "digest", "--op", op, "--contract", contract, "--inputs", *files]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return done.stdout.split()[0]


class AgainstTheTool(unittest.TestCase):
    def test_reductions_and_digests_equal_the_tools(self):
        with tempfile.TemporaryDirectory() as folder:
            for world, n in ((1, 5), (2, 1000), (3, 4099), (5, 2500)):
                stacked = table(world, n, seed=world)
                files = write_inputs(folder, stacked)
                for op in ("sum", "mean"):
                    for contract in ("fixed-order", "exact"):
                        with self.subTest(world=world, n=n, op=op, contract=contract):
                            mine = reduce_verify.digest(reduce_verify.reduce(stacked, op, contract))
                            self.assertEqual(mine, tool_digest(files, op, contract))
                for f in files:
                    os.remove(f)

    def test_digest_is_xxh128_of_the_bytes(self):
        values = table(1, 1001, seed=9)[0]  # NaN payloads included: the bytes as they are
        with tempfile.TemporaryDirectory() as folder:
            (path,) = write_inputs(folder, values.view(1, -1))
            xxh128sum = shutil.which("xxh128sum")
            if xxh128sum:
                done = subprocess.run([xxh128sum, path], capture_output=True, text=True,
                                      check=True)
                self.assertEqual(reduce_verify.digest(values), done.stdout.split()[0])
            # A world of one reduces to its own values (NaNs made canonical).
            finite = torch.nan_to_num(values, nan=1.5)
            (path,) = write_inputs(folder, finite.view(1, -1))
            self.assertEqual(reduce_verify.digest(finite),
                             tool_digest([path], "sum", "fixed-order"))
        # The digest reads the logical row-major order, whatever the strides.
        matrix = torch.arange(12, dtype=torch.float32).view(3, 4)
        self.assertEqual(reduce_verify.digest(matrix.t()),
                         reduce_verify.digest(matrix.t().contiguous()))
        self.assertEqual(reduce_verify.digest(torch.empty(0)), "99aa06d3014798d86001c324468d497f")

    def test_fixed_order_follows_rank_order_and_exact_does_not(self):
        stacked = table(4, 3000, seed=4)
        reversed_rows = stacked.flip(0)
        fixed = [reduce_verify.digest(reduce_verify.reduce(t, "sum")) for t in (stacked,
                                                                               reversed_rows)]
        exact = [reduce_verify.digest(reduce_verify.reduce(t, "sum", "exact"))
                 for t in (stacked, reversed_rows)]
        self.assertNotEqual(fixed[0], fixed[1])
        self.assertEqual(exact[0], exact[1])

    def test_nan_is_canonical(self):
        out = reduce_verify.reduce(floats_from_bits([0x7FC00001, 0x3F800000]).view(2, 1))
        self.assertEqual(struct.unpack("<I", struct.pack("<f", out.item()))[0], 0x7FC00000)


class WorldOfOne(unittest.TestCase):
    """In a world of one process the hooks reduce the bucket in place, no collective moving
    it; the law still applies to its one addend (NaN canonical, as the core's one-row
    reduction gives)."""

    def test_the_hooks_reduce_the_bucket_in_place_by_the_law(self):
        import torch.distributed as dist
        from reduce_verify.ddp import HookState, exact_hook, fixed_order_hook
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
        from hook_world import HandMadeBucket
        values = floats_from_bits([0x7FC00001, 0x3F800000, 0x80000000, 0x00000001, 0xC2F6E979])
        with tempfile.TemporaryDirectory() as scratch:
            dist.init_process_group("gloo", init_method=f"file://{scratch}/store", rank=0,
                                    world_size=1)
            try:
                for hook, contract in ((fixed_order_hook, "fixed-order"),
                                       (exact_hook, "exact")):
                    buffer = values.clone()
                    result = hook(HookState(), HandMadeBucket(buffer)).wait()
                    self.assertEqual(result.data_ptr(), buffer.data_ptr(), contract)
                    expected = reduce_verify.reduce(values.view(1, -1), "mean", contract)
                    self.assertTrue(torch.equal(result.view(torch.int32),
                                                expected.view(torch.int32)), contract)
                    self.assertEqual(struct.unpack("<I", struct.pack("<f", result[0].item()))[0],
                                     0x7FC00000, contract)
            finally:
                dist.destroy_process_group()


class RawStoragePitfalls(unittest.TestCase):
    """digest and reduce read the C ABI's raw bytes: every lazy view torch keeps as a flag on
    the tensor (negation, conjugation) and every layout (strides, storage offset, zero-dim)
    must reach them as the values the tensor holds."""

    def test_lazy_negation_and_conjugation_are_resolved(self):
        for imaginary in ([5.0], [5.0, -1.5, 2.0]):
            z = torch.complex(torch.zeros(len(imaginary)), torch.tensor(imaginary))
            # A float32 view with torch's negative bit, its values -imaginary; with one element
            # it also counts as contiguous, so .contiguous() alone would not copy it.
            imag = z.conj().imag
            self.assertTrue(imag.is_neg())
            negated = torch.tensor([-v for v in imaginary])
            self.assertEqual(reduce_verify.digest(imag), reduce_verify.digest(negated))
            self.assertNotEqual(reduce_verify.digest(imag),
                                reduce_verify.digest(torch.tensor(imaginary)))
        conjugate = torch.complex(torch.ones(2), torch.ones(2)).conj()  # complex: refused
        with self.assertRaisesRegex(reduce_verify.InputError, "complex64"):
            reduce_verify.digest(conjugate)
        negative = torch.ones(2, 4)._neg_view()
        self.assertTrue(negative.is_neg())
        for contract in ("fixed-order", "exact"):
            reduced = reduce_verify.reduce(negative, "sum", contract)
            self.assertEqual(reduced.tolist(), [-2.0] * 4, contract)
        self.assertEqual(reduce_verify.digest(negative), reduce_verify.digest(-torch.ones(2, 4)))

    def test_layouts_reach_the_bytes_as_values(self):
        base = torch.arange(24, dtype=torch.float32)
        offset = base[5:17].view(3, 4)  # a storage offset of 5 elements
        self.assertEqual(offset.storage_offset(), 5)
        self.assertEqual(reduce_verify.digest(offset), reduce_verify.digest(offset.clone()))
        self.assertEqual(reduce_verify.reduce(offset).tolist(),
                         reduce_verify.reduce(offset.clone()).tolist())
        strided = base.view(4, 6)[:, ::2]  # non-contiguous rows and columns
        self.assertEqual(reduce_verify.reduce(strided, "sum").tolist(),
                         strided.sum(0).tolist())
        self.assertEqual(reduce_verify.digest(torch.tensor(3.0)),
                         reduce_verify.digest(torch.tensor([3.0])))  # zero-dim: one value
        expanded = torch.tensor([1.0, 2.0]).expand(3, 2)  # stride 0: three rows, one storage row
        self.assertEqual(reduce_verify.reduce(expanded, "sum").tolist(), [3.0, 6.0])

    def test_tensors_without_bytes_on_the_host_are_refused_by_name(self):
        with self.assertRaisesRegex(reduce_verify.InputError, "meta"):
            reduce_verify.digest(torch.zeros(3, device="meta"))
        with self.assertRaisesRegex(reduce_verify.InputError, "sparse"):
            reduce_verify.digest(torch.zeros(3).to_sparse())


class BadInput(unittest.TestCase):
    def test_other_dtypes_are_refused_by_name(self):
        # float32, bfloat16 and float16 are reduced (test_half.py); nothing else.
        with self.assertRaisesRegex(reduce_verify.InputError, "torch.float64"):
            reduce_verify.reduce(torch.zeros(2, 3, dtype=torch.float64))
        with self.assertRaisesRegex(reduce_verify.InputError, "torch.int64"):
            reduce_verify.digest(torch.zeros(3, dtype=torch.int64))

    def test_bad_shapes_ops_and_contracts(self):
        with self.assertRaisesRegex(reduce_verify.InputError, r"W × n \(2-D\)"):
            reduce_verify.reduce(torch.zeros(6))
        with self.assertRaisesRegex(reduce_verify.InputError, "'max'"):
            reduce_verify.reduce(torch.zeros(2, 3), op="max")
        with self.assertRaisesRegex(reduce_verify.InputError, "library-sum"):
            reduce_verify.reduce(torch.zeros(2, 3), contract="library-sum")
        with self.assertRaisesRegex(reduce_verify.InputError, "not a torch.Tensor"):
            reduce_verify.digest([1.0, 2.0])

    def test_the_c_abi_names_the_argument(self):
        lib = _library.library()
        stacked = torch.zeros(3, 8)
        # The output overlapping slot 1 (rather than being exactly slot 0).
        status = lib.rv_fixed_order_reduce_stacked(stacked.data_ptr(), 3, 8, 8, 0,
                                                   stacked[1].data_ptr())
        self.assertEqual(status, 1)
        self.assertIn("overlaps slot 1", lib.rv_last_error().decode())
        status = lib.rv_fixed_order_reduce_stacked(stacked.data_ptr(), 3, 4, 8, 0,
                                                   torch.zeros(8).data_ptr())
        self.assertEqual(status, 1)
        self.assertIn("slot_stride < n", lib.rv_last_error().decode())
        status = lib.rv_exact_reduce_stacked(None, 2, 8, 8, 1, None)
        self.assertEqual(status, 1)
        self.assertIn("null pointer", lib.rv_last_error().decode())
        status = lib.rv_fixed_order_reduce_stacked(stacked.data_ptr(), 0, 8, 8, 0,
                                                   stacked.data_ptr())
        self.assertIn("at least one rank", lib.rv_last_error().decode())
        status = lib.rv_fixed_order_reduce_stacked(stacked.data_ptr(), 3, 8, 8, 7,
                                                   stacked.data_ptr())
        self.assertIn("op 7", lib.rv_last_error().decode())
        self.assertEqual(lib.rv_fixed_order_reduce_stacked(stacked.data_ptr(), 3, 8, 8, 0,
                                                           stacked.data_ptr()), 0)
        self.assertEqual(lib.rv_last_error().decode(), "")

    def test_cuda_entry_points_answer_without_a_device(self):
        lib = _library.library()
        fake = ctypes.c_void_p(4096)  # never read: no device here, or no CUDA in the build
        status = lib.rv_cuda_fixed_order_reduce_stacked(0, fake, 1, 4, 4, 0, ctypes.c_void_p(8192),
                                                        None)
        message = lib.rv_last_error().decode()
        if not lib.rv_built_with_cuda():
            self.assertEqual(status, 4)
            self.assertIn("built without CUDA", message)
            return
        self.assertEqual(lib.rv_cuda_fixed_order_reduce_stacked(0, None, 1, 0, 1, 0, None, None), 1)
        self.assertIn("null pointer", lib.rv_last_error().decode())
        if status != 0:  # a CUDA build on a box without a GPU: a CUDA error naming the call
            self.assertEqual(status, 2)
            self.assertIn("CUDA", message)

    def test_flush_to_zero_is_refused(self):
        stacked = floats_from_bits([0x00000001, 0x00000001]).view(2, 1)
        self.assertTrue(torch.set_flush_denormal(True), "this CPU cannot set FTZ/DAZ")
        try:
            with self.assertRaisesRegex(reduce_verify.RuntimeFailure, "DAZ=on"):
                reduce_verify.reduce(stacked)
        finally:
            torch.set_flush_denormal(False)
        self.assertEqual(struct.unpack("<I", struct.pack("<f", reduce_verify.reduce(
            stacked).item()))[0], 0x00000002)

    def test_a_missing_library_is_named(self):
        code = ("import reduce_verify, torch\n"
                "try:\n    reduce_verify.digest(torch.zeros(1))\n"
                "except reduce_verify.LibraryNotFound as e:\n    print(e)\n")
        env = dict(os.environ, REDUCE_VERIFY_LIB="/nonexistent/libreduce_verify_c.so")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, check=True)
        self.assertIn("/nonexistent/libreduce_verify_c.so: no such file", done.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
