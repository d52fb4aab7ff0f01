"""Tensor-level entry points over the C ABI: the digest of a tensor and the reduction of a
stacked W × n table, on the CPU or a CUDA device. Both read float32 only."""

import ctypes
import sys

import torch

from . import _library
from .errors import InputError, Unsupported

CONTRACTS = ("fixed-order", "exact")
OPS = {"sum": _library.OP_SUM, "mean": _library.OP_MEAN}


def check_float32(tensor: torch.Tensor, what: str) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise InputError(f"{what} is a {type(tensor).__name__}, not a torch.Tensor")
    if tensor.dtype != torch.float32:
        raise InputError(f"{what} holds {tensor.dtype}; reduce-verify's contracts are defined "
                         "on binary32 only (torch.float32): nothing is converted silently")
    if tensor.layout != torch.strided:
        raise InputError(f"{what} is {'sparse' if tensor.is_sparse else tensor.layout}; only "
                         "dense (strided) float32 tensors are reduced")
    if tensor.device.type not in ("cpu", "cuda"):
        raise InputError(f"{what} is on {tensor.device}, which holds no bytes this package "
                         "reads (cpu and cuda tensors are supported)")


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
                          "little-endian binary32 bytes")


def parse_op(op: str) -> int:
    if op not in OPS:
        raise InputError(f"op {op!r} is neither 'sum' nor 'mean'")
    return OPS[op]


def parse_contract(contract: str) -> str:
    if contract not in CONTRACTS:
        raise InputError(f"contract {contract!r} is not one of {', '.join(CONTRACTS)} "
                         "(library-sum is the library's own all-reduce: use DDP's default hook)")
    return contract


def digest(tensor: torch.Tensor) -> str:
    """The XXH3-128 digest (32 lowercase hex digits) of the tensor's values as little-endian
    binary32 in row-major order: what `reduce-verify digest` prints for a reduced arena of the
    same bytes, and what `xxh128sum` prints for a file holding them. CUDA tensors are copied
    to the host first."""
    check_float32(tensor, "the tensor to digest")
    check_little_endian()
    host = values_of(tensor.detach().to("cpu"))
    hex_out = ctypes.create_string_buffer(33)
    _library.check(_library.library().rv_digest_floats(host.data_ptr(), host.numel(), hex_out))
    return hex_out.value.decode()


def _cuda_stream_of(device):
    return ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)


def reduce_stacked_into(stacked, world, slot_stride, n, op, contract, out):
    """The C ABI's reduction over raw tensors: `stacked` (float32, contiguous) holds W slots
    of n values, slot_stride apart; `out` (n float32, contiguous, same device; it may be slot
    0 itself) receives the result. CUDA tensors are reduced on the device's current stream."""
    code = parse_op(op)
    parse_contract(contract)
    for tensor, what in ((stacked, "the stacked addends"), (out, "the output")):
        check_float32(tensor, what)
        check_raw(tensor, what)
    if stacked.device != out.device:
        raise InputError(f"the addends are on {stacked.device} and the output on {out.device}: "
                         "one device per reduction")
    if out.numel() < n or (world > 0 and stacked.numel() < (world - 1) * slot_stride + n):
        raise InputError(f"tensors too small for W={world}, n={n}, slot_stride={slot_stride}")
    lib = _library.library()
    if stacked.device.type == "cpu":
        function = lib.rv_fold_stacked if contract == "fixed-order" else lib.rv_exact_reduce_stacked
        _library.check(function(stacked.data_ptr(), world, slot_stride, n, code, out.data_ptr()))
    elif stacked.device.type == "cuda":
        if not lib.rv_built_with_cuda():
            raise Unsupported(f"{stacked.device} tensors need a libreduce_verify_c.so built with "
                              f"CUDA; this one is not ({_library.library_info()})")
        device = stacked.device.index if stacked.device.index is not None else \
            torch.cuda.current_device()
        function = (lib.rv_cuda_fold_stacked if contract == "fixed-order"
                    else lib.rv_cuda_exact_reduce_stacked)
        _library.check(function(device, stacked.data_ptr(), world, slot_stride, n, code,
                                out.data_ptr(), _cuda_stream_of(device)))
    else:
        raise InputError(f"{stacked.device.type} tensors are not supported (cpu and cuda are)")
    return out


def reduce(stacked: torch.Tensor, op: str = "sum",
           contract: str = "fixed-order") -> torch.Tensor:
    """Reduces a W × n float32 tensor (row r = rank r's addends) to n values under a contract:
    "fixed-order" (((x_0 + x_1) + x_2) + …, in binary32) or "exact" (the correctly rounded
    sum); op "sum" or "mean". A new tensor on the same device; the input is not changed."""
    check_float32(stacked, "the stacked addends")
    if stacked.dim() != 2:
        raise InputError(f"the stacked addends must be W × n (2-D), not {tuple(stacked.shape)}")
    world, n = stacked.shape
    if world < 1:
        raise InputError("a reduction needs at least one rank (row)")
    table = values_of(stacked)
    out = torch.empty(n, dtype=torch.float32, device=stacked.device)
    return reduce_stacked_into(table, world, n, n, op, contract, out)
