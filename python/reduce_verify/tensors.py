"""Tensor-level entry points over the C ABI: the digest of a tensor and the reduction of a
stacked W × n table, on the CPU or a CUDA device. Both read torch.float32, torch.bfloat16 and
torch.float16 (docs/DESIGN.md §2.5: a half-precision addend is widened to binary32 exactly and
the result rounded to its dtype once), and refuse every other dtype by name."""

import ctypes
import sys
from typing import Union

import torch

from . import _library
from .errors import InputError, Unsupported

CONTRACTS = ("fixed-order", "exact")
OPS = {"sum": _library.OP_SUM, "mean": _library.OP_MEAN}
# The dtypes the contracts are defined on: torch's, the C ABI's rv_dtype, and the spelling of
# manifests and of the command line's --dtype (core/dtype.h).
DTYPES = {torch.float32: (_library.DTYPE_F32, "f32"),
          torch.bfloat16: (_library.DTYPE_BF16, "bf16"),
          torch.float16: (_library.DTYPE_F16, "f16")}
SUPPORTED = "torch.float32, torch.bfloat16 or torch.float16"


def dtype_code(dtype: torch.dtype) -> int:
    """The C ABI's rv_dtype of a torch dtype; InputError naming any other."""
    if dtype not in DTYPES:
        raise InputError(f"{dtype} is not {SUPPORTED}: reduce-verify's contracts are defined "
                         "on binary32, bfloat16 and binary16 only, and nothing is converted "
                         "silently")
    return DTYPES[dtype][0]


def dtype_name(dtype: torch.dtype) -> str:
    """"f32", "bf16" or "f16": the tool's --dtype and the manifests' spelling."""
    dtype_code(dtype)
    return DTYPES[dtype][1]


def check_reducible(tensor: torch.Tensor, what: str) -> int:
    """Refuses, naming the cause, a tensor the C ABI cannot read: not a tensor, another dtype
    than float32, bfloat16 and float16, sparse, or on a device without host-visible bytes.
    Returns the tensor's rv_dtype."""
    if not isinstance(tensor, torch.Tensor):
        raise InputError(f"{what} is a {type(tensor).__name__}, not a torch.Tensor")
    if tensor.dtype not in DTYPES:
        raise InputError(f"{what} holds {tensor.dtype}; reduce-verify's contracts are defined "
                         f"on {SUPPORTED} only: nothing is converted silently")
    if tensor.layout != torch.strided:
        raise InputError(f"{what} is {'sparse' if tensor.is_sparse else tensor.layout}; only "
                         "dense (strided) tensors are reduced")
    if tensor.device.type not in ("cpu", "cuda"):
        raise InputError(f"{what} is on {tensor.device}, which holds no bytes this package "
                         "reads (cpu and cuda tensors are supported)")
    return DTYPES[tensor.dtype][0]


def values_of(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor as dense row-major bytes that hold its values: torch keeps negation (and, on
    complex tensors, conjugation) as a flag on a view, e.g. `z.conj().imag` or `x._neg_view()`,
    whose storage holds the values un-negated, and .contiguous() alone keeps such a view when
    its layout is already contiguous. The raw pointer the C ABI reads must see the values."""
    return tensor.detach().resolve_conj().resolve_neg().contiguous()


def check_raw(tensor: torch.Tensor, what: str) -> None:
    """For tensors whose storage the C ABI reads or writes in place: refuse what values_of
    would have to copy."""
    if tensor.is_neg() or tensor.is_conj():
        raise InputError(f"{what} is a lazily negated or conjugated view: its storage does not "
                         "hold its values (resolve_neg() first)")
    if not tensor.is_contiguous():
        raise InputError(f"{what} is not contiguous")


def check_little_endian() -> None:
    if sys.byteorder != "little":
        raise Unsupported("this host is big-endian; digests and recordings are defined on "
                          "little-endian bytes")


def parse_op(op: str) -> int:
    if op not in OPS:
        raise InputError(f"op {op!r} is neither 'sum' nor 'mean'")
    return OPS[op]


def parse_contract(contract: str) -> str:
    if contract not in CONTRACTS:
        raise InputError(f"contract {contract!r} is not one of {', '.join(CONTRACTS)} "
                         "(library-sum is the library's own all-reduce: use DDP's default hook)")
    return contract


def digest_at(address: int, size: int) -> bytes:
    """XXH3-128 of `size` host bytes at `address`, canonical (xxHash's big-endian 16 bytes):
    the one digest of the package, every other is built on it. `size` is even: the C ABI
    digests whole elements, here taken as 2-byte ones (their bytes are hashed as they are)."""
    if size % 2:
        raise InputError(f"{size} bytes: the C ABI digests whole 2-byte elements")
    hex_out = ctypes.create_string_buffer(33)
    _library.check(_library.library().rv_digest_values(address or None, size // 2,
                                                       _library.DTYPE_F16, hex_out))
    return bytes.fromhex(hex_out.value.decode())


def digest_bytes(data: bytes) -> bytes:
    """XXH3-128 of `data` zero-padded to a multiple of 4 bytes (the chain's and the digest
    tree's rule, docs/DESIGN.md §12), canonical."""
    data = bytes(data) + b"\0" * (-len(data) % 4)
    buffer = ctypes.create_string_buffer(data, len(data))
    return digest_at(ctypes.addressof(buffer), len(data))


def host_bytes(tensor: torch.Tensor, multiple: int = 1) -> torch.Tensor:
    """The tensor's values as row-major little-endian bytes of its dtype: a contiguous host
    uint8 tensor, zero-padded to a multiple of `multiple` bytes."""
    check_little_endian()
    host = values_of(tensor.detach().to("cpu")).reshape(-1)
    if host.numel() <= 1:
        # One element is contiguous whatever its stride (z.conj().imag keeps a stride of 2),
        # and view() below refuses a stride other than 1: any stride reads the same bytes.
        host = host.as_strided((host.numel(),), (1,))
    raw = host if host.dtype == torch.uint8 else host.view(torch.uint8)
    if raw.numel() % multiple:
        raw = torch.cat([raw, torch.zeros(-raw.numel() % multiple, dtype=torch.uint8)])
    return raw


def flat_digest(tensor: torch.Tensor, multiple: int = 1) -> bytes:
    """XXH3-128 of the tensor's values as row-major little-endian bytes of its dtype,
    zero-padded to a multiple of `multiple` bytes, canonical: for float32 (and any padding),
    what `xxh128sum` prints for a file of those bytes. digest() is this, as hex; the trail's
    flat kind pads to 4 bytes (docs/DESIGN.md §12)."""
    raw = host_bytes(tensor, multiple)
    return digest_at(raw.data_ptr(), raw.numel())


def digest(tensor: torch.Tensor) -> str:
    """The XXH3-128 digest (32 lowercase hex digits) of the tensor's values as little-endian
    elements of its dtype in row-major order (4 bytes for float32, 2 for bfloat16 and
    float16): what `reduce-verify digest [--dtype bf16|f16]` prints for a reduced arena of the
    same bytes, and what `xxh128sum` prints for a file holding them. CUDA tensors are copied
    to the host first."""
    check_reducible(tensor, "the tensor to digest")
    return flat_digest(tensor).hex()


def _cuda_stream_of(device: Union[int, torch.device]) -> ctypes.c_void_p:
    return ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)


def reduce_stacked_into(stacked: torch.Tensor, world: int, slot_stride: int, n: int, op: str,
                        contract: str, out: torch.Tensor) -> torch.Tensor:
    """The C ABI's reduction over raw tensors: `stacked` (float32, bfloat16 or float16,
    contiguous) holds W slots of n values, slot_stride apart; `out` (n values of the same
    dtype, contiguous, same device; it may be slot 0 itself) receives the result, rounded to
    that dtype as the contract says. CUDA tensors are reduced on the device's current
    stream."""
    code = parse_op(op)
    parse_contract(contract)
    for tensor, what in ((stacked, "the stacked addends"), (out, "the output")):
        check_reducible(tensor, what)
        check_raw(tensor, what)
    if stacked.dtype != out.dtype:
        raise InputError(f"the addends are {stacked.dtype} and the output {out.dtype}: the "
                         "result is written in the addends' dtype")
    dtype = DTYPES[stacked.dtype][0]
    if stacked.device != out.device:
        raise InputError(f"the addends are on {stacked.device} and the output on {out.device}: "
                         "one device per reduction")
    if out.numel() < n or (world > 0 and stacked.numel() < (world - 1) * slot_stride + n):
        raise InputError(f"tensors too small for W={world}, n={n}, slot_stride={slot_stride}")
    lib = _library.library()
    # float32 keeps the binary32 entry points (the *_dtype ones are the same for it).
    if stacked.device.type == "cpu" and dtype == _library.DTYPE_F32:
        function = (lib.rv_fixed_order_reduce_stacked if contract == "fixed-order"
                    else lib.rv_exact_reduce_stacked)
        _library.check(function(stacked.data_ptr(), world, slot_stride, n, code, out.data_ptr()))
    elif stacked.device.type == "cpu":
        function = (lib.rv_fixed_order_reduce_stacked_dtype if contract == "fixed-order"
                    else lib.rv_exact_reduce_stacked_dtype)
        _library.check(function(stacked.data_ptr(), world, slot_stride, n, code, dtype,
                                out.data_ptr()))
    elif stacked.device.type == "cuda":
        if not lib.rv_built_with_cuda():
            raise Unsupported(f"{stacked.device} tensors need a libreduce_verify_c.so built with "
                              f"CUDA; this one is not ({_library.library_info()})")
        device = stacked.device.index if stacked.device.index is not None else \
            torch.cuda.current_device()
        if dtype == _library.DTYPE_F32:
            function = (lib.rv_cuda_fixed_order_reduce_stacked if contract == "fixed-order"
                        else lib.rv_cuda_exact_reduce_stacked)
            _library.check(function(device, stacked.data_ptr(), world, slot_stride, n, code,
                                    out.data_ptr(), _cuda_stream_of(device)))
        else:
            function = (lib.rv_cuda_fixed_order_reduce_stacked_dtype if contract == "fixed-order"
                        else lib.rv_cuda_exact_reduce_stacked_dtype)
            _library.check(function(device, stacked.data_ptr(), world, slot_stride, n, code,
                                    dtype, out.data_ptr(), _cuda_stream_of(device)))
    else:
        raise InputError(f"{stacked.device.type} tensors are not supported (cpu and cuda are)")
    return out


def reduce(stacked: torch.Tensor, op: str = "sum",
           contract: str = "fixed-order") -> torch.Tensor:
    """Reduces a W × n tensor (row r = rank r's addends) to n values under a contract:
    "fixed-order" (((x_0 + x_1) + x_2) + …, in binary32) or "exact" (the correctly rounded
    sum); op "sum" or "mean". float32, bfloat16 or float16: half-precision addends are
    widened exactly and the result rounded once to their dtype (fixed-order: after the binary32
    fold; exact: the exact sum itself). A new tensor of the input's dtype on the same device;
    the input is not changed."""
    check_reducible(stacked, "the stacked addends")
    if stacked.dim() != 2:
        raise InputError(f"the stacked addends must be W × n (2-D), not {tuple(stacked.shape)}")
    world, n = stacked.shape
    if world < 1:
        raise InputError("a reduction needs at least one rank (row)")
    table = values_of(stacked)
    out = torch.empty(n, dtype=stacked.dtype, device=stacked.device)
    return reduce_stacked_into(table, world, n, n, op, contract, out)
