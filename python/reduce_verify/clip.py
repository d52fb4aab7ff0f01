"""clip_grad_norm_ whose norm no sharding changes (docs/fsdp.md, "Clipping").

torch's clip_grad_norm_ sums squares in floating point: per tensor, then over tensors, and
under FSDP over shards, so the norm's bits (and every gradient scaled by it) depend on how the
gradients are cut. Here the norm comes from the exact sum of every element's square: a
float32's square is exact in binary64 (24-bit significands, 48-bit products, exponents far from
binary64's limits), so each square is an integer M < 2^53 times 2^(e − 53), e ≥ −297; cut at
bit 2^BASE (BASE = −350) into 30-bit limbs, it adds into Python integers exactly, and the ranks'
sums meet in one int64 SUM all-reduce of 30-bit digits (W · 2^30 cannot overflow). The norm is
then RN32(√S): the square root of the exact sum, rounded once to float32 (an integer square root
rounded to odd at 40 bits, converted exactly to binary64 and rounded to binary32). norm_type 1
is the exact sum of |g| rounded once; inf the largest |g| (a maximum is exact). So the norm's bits,
and the scale torch's formula derives from it, are the same for one process, DDP and FSDP at any
W, whenever the gradients' elements are."""

import math
from typing import Any, Iterable, List, Optional, Tuple, Union

import torch
import torch.distributed as dist

from . import _collectives
from .errors import InputError
from .tensors import DTYPES, SUPPORTED

BASE = -350  # the lowest bit any square of a binary32 value can hold is 2^-298: BASE below it
LIMB = 30
DIGITS = 24  # 720 bits: the largest square (< 2^256) times more than 2^100 elements
_CHUNK = 1 << 30  # elements summed in one int64 reduction (each part < 2^31)

Parameters = Union[torch.Tensor, Iterable[torch.Tensor]]


def _local_gradient(p: torch.Tensor,
                    given: Optional[Any] = None) -> Tuple[Optional[torch.Tensor], Optional[Any]]:
    """(the gradient this rank holds, the process group it is sharded over or None when it is
    whole on every rank): `given` (a group) for every gradient when given, else a DTensor's
    mesh group."""
    grad = p.grad
    group = given
    placements = getattr(p, "placements", None)
    if placements is not None:  # a DTensor parameter (FSDP2)
        shards = [i for i, placement in enumerate(placements) if placement.is_shard()]
        if len(shards) > 1 or (shards and len(placements) > 1):
            raise InputError(f"a DTensor parameter placed {placements}: clip_grad_norm_ takes "
                             "one shard dimension on a one-dimensional mesh (FSDP)")
        if shards and given is None:
            group = getattr(p, "device_mesh").get_group(shards[0])
    if grad is not None and hasattr(grad, "to_local"):
        grad = grad.to_local()
    return grad, group


def _exact_sum(values: torch.Tensor) -> int:
    """Σ values (binary64, finite, ≥ 0, each an integer times 2^-350 with fewer than 54
    significant bits) in units of 2^BASE, exactly."""
    values = values[values != 0]
    if values.numel() == 0:
        return 0
    mantissa, exponent = torch.frexp(values)
    significand = (mantissa * 2.0 ** 53).to(torch.int64)  # exact: m has at most 53 bits
    position = exponent.to(torch.int64) - 53 - BASE  # ≥ 0: the significand's lowest bit
    limb = torch.div(position, LIMB, rounding_mode="floor")
    shift = position - limb * LIMB
    mask = (1 << LIMB) - 1
    low = (significand & mask) << shift  # < 2^59
    high = (significand >> LIMB) << shift  # < 2^52
    parts = ((limb, low & mask), (limb + 1, (low >> LIMB) + (high & mask)),
             (limb + 2, high >> LIMB))
    total = 0
    for index, part in parts:
        for k in torch.unique(index).tolist():
            total += int(part[index == k].sum().item()) << (LIMB * k)
    return total


def _magnitudes(grad: torch.Tensor, norm_type: float) -> Tuple[int, int, int, float]:
    """(exact sum in units of 2^BASE, NaNs, infinities, largest finite |g|) of one gradient."""
    if grad.dtype not in DTYPES:
        raise InputError(f"a gradient is {grad.dtype}; clip_grad_norm_ is defined on "
                         f"{SUPPORTED} gradients only")
    flat = grad.detach().reshape(-1)
    total, nans, infinities, largest = 0, 0, 0, 0.0
    for start in range(0, flat.numel(), _CHUNK):
        wide = flat[start:start + _CHUNK].to(torch.float64)  # exact widening
        nans += int(torch.isnan(wide).sum().item())
        infinities += int(torch.isinf(wide).sum().item())
        finite = wide[torch.isfinite(wide)].abs()
        if finite.numel() == 0:
            continue
        if norm_type == math.inf:
            largest = max(largest, float(finite.max().item()))
        else:
            total += _exact_sum(finite * finite if norm_type == 2.0 else finite)
    return total, nans, infinities, largest


def _to_digits(total: int) -> List[int]:
    if total >> (LIMB * DIGITS):
        raise InputError("clip_grad_norm_: the sum of squares passed 2^(720 - 350)")
    return [(total >> (LIMB * k)) & ((1 << LIMB) - 1) for k in range(DIGITS)]


def _round_to_float32(integer: int, scale: int) -> float:
    """RN32(integer · 2^scale) as a Python float: rounded to odd at 40 bits (exact in
    binary64), so binary64's conversion to binary32 rounds once, correctly."""
    if integer == 0:
        return 0.0
    drop = max(0, integer.bit_length() - 40)
    kept = integer >> drop
    if kept << drop != integer:
        kept |= 1
    value = math.ldexp(kept, drop + scale)
    return float(torch.tensor(value, dtype=torch.float64).to(torch.float32).item())


def _sqrt_to_float32(total: int) -> float:
    """RN32(√(total · 2^BASE)) (BASE even)."""
    if total == 0:
        return 0.0
    shift = max(0, 100 - total.bit_length())
    shift += shift % 2
    scaled = total << shift
    root = math.isqrt(scaled)
    inexact = root * root != scaled
    drop = max(0, root.bit_length() - 40)
    kept = root >> drop
    if inexact or kept << drop != root:
        kept |= 1
    value = math.ldexp(kept, drop - shift // 2 + BASE // 2)
    return float(torch.tensor(value, dtype=torch.float64).to(torch.float32).item())


def _all_reduce(words: torch.Tensor, op: Any, group: Any) -> torch.Tensor:
    device = torch.device("cpu")
    if dist.get_backend(group) == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    moved = words.to(device)
    _collectives.launch_and_wait(dist.all_reduce, moved, op=op, group=group)
    return moved.cpu()


def total_norm(parameters: Parameters, norm_type: float = 2.0,
               group: Optional[dist.ProcessGroup] = None) -> torch.Tensor:
    """The global norm of the parameters' gradients (float32, 0-dim, on the first gradient's
    device). `group` None: DTensor gradients sharded over a one-dimensional mesh are summed over
    its group, plain tensors (DDP, one process) are taken as whole on every rank. `group` given:
    every gradient is this rank's shard over it (FSDP1's flat shards, or any sharding of the
    caller's), summed over it. Every rank of a sharded group must call it."""
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    norm_type = float(norm_type)
    if norm_type not in (1.0, 2.0, math.inf):
        raise InputError(f"norm_type {norm_type}: clip_grad_norm_ computes the 1, 2 and inf "
                         "norms exactly, no other")
    sharded = [0, 0, 0, 0.0]
    whole = [0, 0, 0, 0.0]
    groups = set()
    device = None
    for p in parameters:
        grad, shard_group = _local_gradient(p, group)
        if shard_group is not None:
            groups.add(shard_group)
        if grad is None:
            continue
        device = grad.device if device is None else device
        into = sharded if shard_group is not None else whole
        total, nans, infinities, largest = _magnitudes(grad, norm_type)
        into[0] += total
        into[1] += nans
        into[2] += infinities
        into[3] = max(into[3], largest)
    if len(groups) > 1:
        raise InputError("the gradients are sharded over several process groups; "
                         "clip_grad_norm_ takes one")
    if groups:
        reduce_group = groups.pop()
        words = torch.tensor(_to_digits(int(sharded[0])) + [int(sharded[1]), int(sharded[2])],
                             dtype=torch.int64)
        summed = _all_reduce(words, dist.ReduceOp.SUM, reduce_group).tolist()
        sharded[0] = sum(d << (LIMB * k) for k, d in enumerate(summed[:DIGITS]))
        sharded[1], sharded[2] = summed[DIGITS], summed[DIGITS + 1]
        if norm_type == math.inf:
            peak = torch.tensor([float(sharded[3])], dtype=torch.float64)
            sharded[3] = float(_all_reduce(peak, dist.ReduceOp.MAX, reduce_group).item())
    total, nans, infinities = (int(sharded[i]) + int(whole[i]) for i in range(3))
    if nans:
        value = math.nan
    elif infinities:
        value = math.inf
    elif norm_type == math.inf:
        value = max(float(sharded[3]), float(whole[3]))
    elif norm_type == 2.0:
        value = _sqrt_to_float32(total)
    else:
        value = _round_to_float32(total, BASE)
    return torch.tensor(value, dtype=torch.float32,
                        device=device if device is not None else torch.device("cpu"))


def clip_grad_norm_(parameters: Parameters, max_norm: float, norm_type: float = 2.0,
                    group: Optional[dist.ProcessGroup] = None) -> torch.Tensor:
    """torch.nn.utils.clip_grad_norm_ with the norm of total_norm(): each gradient (a DTensor's
    local shard in place) multiplied by clamp(max_norm / (norm + 1e-6), max=1) as torch does.
    Returns the norm (float32)."""
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    norm = total_norm(parameters, norm_type, group)
    coefficient = torch.clamp(float(max_norm) / (norm + 1e-6), max=1.0)
    for p in parameters:
        grad, _ = _local_gradient(p)
        if grad is not None:
            grad.detach().mul_(coefficient.to(grad.device))
    return norm
