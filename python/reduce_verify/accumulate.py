"""Exact gradient accumulation: the same weights however the global batch is split over ranks
and accumulation steps (docs/DESIGN.md §11).

    acc = ExactGradAccumulator(model, group)      # once
    acc.add()                                     # after each micro-batch's backward
    acc.reduce(mean_over=M)                       # before optimizer.step()

add() moves every p.grad into an exact per-element sum (the C ABI's rv_accumulator) and clears
it; reduce() combines the sums of every rank of `group` through its int64 all-reduces (one MAX
for the header, one MAX for the windows, one SUM for the digits) and writes RN(Σ / M) into
each p.grad: the correctly rounded mean of every micro-batch's gradient on every rank, whatever
the split, the order or the grouping. Ranks may hold different numbers of micro-batches. With
DDP, run every micro-batch's backward under ddp.no_sync() (DDP must not all-reduce in float)
and pass the DDP module or its module.

bfloat16 and float16 gradients are added as the binary32 values they are (widening is exact),
and each result is rounded once, directly to its parameter's dtype (docs/DESIGN.md §2.5):
the correctly rounded mean in that dtype. Any other dtype (float64, say) is an InputError
naming it at the first add(), and reduce() refuses it on every rank once they agreed on the
layout: nothing is reduced another way.

The prerequisite: the split must not change a micro-batch's own gradient, so the micro-batch
size is fixed and the kernels deterministic (torch.use_deterministic_algorithms(True), a fixed
torch.set_num_threads on the CPU)."""

import ctypes
import hashlib
import os
import pathlib
import weakref
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

import torch
import torch.distributed as dist

from . import _collectives, _library
from .errors import InputError, WorldDisagreement
from .recorder import write_rank_file
from .tensors import DTYPES, SUPPORTED, digest, dtype_code, dtype_name

BLOCK = 1024  # exact::kBlock: every parameter starts a block of the accumulator
_HEADER_FIELDS = ("magic", "accumulator length", "layout (parameter shapes and dtypes)", "op",
                  "mean_over")
_HEADER_WORDS = 2 * len(_HEADER_FIELDS)
_MAGIC = 0x52564143

_c = ctypes
_lib = _library.library
# The accumulator's C functions, by name (their signatures are _library.SIGNATURES, the one
# table). python/bench/accumulate_overhead.py times each, iterating _SIGNATURES.
FUNCTIONS = tuple(name for name in _library.SIGNATURES if name.startswith("rv_accumulator_"))
_SIGNATURES = FUNCTIONS

Named = List[Tuple[str, torch.nn.Parameter]]
Model = Union[torch.nn.Module, Iterable[torch.nn.Parameter]]
# combine(tensors, reduction): the tensors of every rank reduced elementwise (MAX or SUM).
Combine = Callable[[List[torch.Tensor], Any], torch.Tensor]


def _parameters_of(model: Model) -> Named:
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        model = model.module
    if isinstance(model, torch.nn.Module):
        named = list(model.named_parameters())
    else:
        named = [(f"parameter {i}", p) for i, p in enumerate(model)]
    return [(name, p) for name, p in named if p.requires_grad]


def _layout_tag(params: Named) -> int:
    text = ";".join(f"{name}:{tuple(p.shape)}:{p.dtype}" for name, p in params)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little",
                          signed=True)


class ExactGradAccumulator:
    """Exact accumulation of a model's gradients over micro-batches and ranks.

    model: a torch.nn.Module (or DDP module, or an iterable of parameters), every parameter
    that requires a gradient on one device (the CPU, or one CUDA device). group: a
    torch.distributed process group (None: the default group when one is initialised, else a
    world of one process). record_digests: keep the digest of each micro-batch's gradient (the
    parameters' gradients concatenated) in .records; record_dir: also write each one as the raw
    bytes of its dtype (rank<R>-mb<K>.f32, .bf16 or .f16) for `reduce-verify digest --contract
    exact --dtype <that dtype> --inputs` (recording needs every parameter of one dtype).
    Parameters may be float32, bfloat16 and float16, mixed: each result is written in its
    parameter's dtype."""

    def __init__(self, model: Model, group: Optional[dist.ProcessGroup] = None,
                 record_digests: bool = False,
                 record_dir: Union[None, str, "os.PathLike[str]"] = None):
        self._params = _parameters_of(model)
        if not self._params:
            raise InputError("ExactGradAccumulator: the model has no parameter that requires "
                             "a gradient")
        self._device = self._params[0][1].device
        for name, p in self._params:
            if p.device != self._device:
                raise InputError(f"ExactGradAccumulator: parameter {name} is on {p.device}, "
                                 f"the first one on {self._device}: one device per accumulator")
        if self._device.type not in ("cpu", "cuda"):
            raise InputError(f"ExactGradAccumulator: parameters on {self._device} (CPU or CUDA)")
        # Another dtype is refused at the first add() and in reduce(), after the layout's
        # agreement, so that a world whose ranks differ in dtypes still learns it on every rank.
        self._unsupported = [f"{name} ({p.dtype})" for name, p in self._params
                             if p.dtype not in DTYPES]
        self._offsets = []
        count = 0
        for _, p in self._params:
            self._offsets.append(count)
            count += -(-p.numel() // BLOCK) * BLOCK
        self.count = count
        self._layout = _layout_tag(self._params)
        self._group = group
        # Both may be changed between micro-batches (to record one step only).
        self.record_digests = record_digests
        self.record_dir = record_dir
        # The R of the files' names; None: the group's rank (or 0).
        self.record_rank: Optional[int] = None
        self.records: List[Dict[str, Any]] = []
        self._local_micro_batches = 0
        self._handle: Optional[ctypes.c_void_p] = _c.c_void_p()
        device_index = -1
        if self._device.type == "cuda":
            device_index = self._device.index if self._device.index is not None else \
                torch.cuda.current_device()
        _library.check(_lib().rv_accumulator_create(count, device_index,
                                                    _c.byref(self._handle)))
        # On a GPU a micro-batch's adds are settled one micro-batch later (docs/DESIGN.md §11):
        # its gradients are held until the next forward pass has been enqueued, by then the
        # device is past the adds, and are let go before that pass's backward makes new ones.
        self._held: Optional[List[torch.Tensor]] = None
        self._forward_hook: Any = None  # a torch.utils.hooks.RemovableHandle
        self._agreement_words: Optional[torch.Tensor] = None  # _agreement_buffer()
        if self._device.type == "cuda" and isinstance(model, torch.nn.Module):
            this = weakref.ref(self)

            def resolve_after_forward(module: torch.nn.Module, inputs: Any, output: Any) -> None:
                accumulator = this()
                if accumulator is not None:
                    accumulator._resolve()
            self._forward_hook = model.register_forward_hook(resolve_after_forward)

    def _resolve(self) -> None:
        """Settles the last micro-batch's adds (a wait for a flag read back behind them) and
        lets its gradients go."""
        if self._held is not None:
            _library.check(_lib().rv_accumulator_resolve(self._handle))
            self._held = None

    def __del__(self) -> None:
        hook = getattr(self, "_forward_hook", None)
        if hook is not None:
            hook.remove()
        handle = getattr(self, "_handle", None)
        if handle:
            _lib().rv_accumulator_destroy(handle)
            self._handle = None

    def _stream(self) -> Optional[int]:
        if self._device.type != "cuda":
            return None
        return torch.cuda.current_stream(self._device).cuda_stream

    @property
    def micro_batches(self) -> int:
        """The micro-batches this rank added since the last reduce()."""
        return self._local_micro_batches

    def footprint(self) -> Tuple[int, int, int]:
        """(bytes held, blocks kept wide, blocks with special values): docs/DESIGN.md §11."""
        values = [_c.c_size_t() for _ in range(3)]
        _library.check(_lib().rv_accumulator_footprint(self._handle,
                                                       *[_c.byref(v) for v in values]))
        held, wide, special = (v.value for v in values)
        return held, wide, special

    def add(self) -> None:
        """Moves every parameter's gradient into the exact sums and sets p.grad to None. A
        parameter without a gradient adds nothing (a zero gradient)."""
        self._resolve()
        grads = []
        for name, p in self._params:
            g = p.grad
            if g is None:
                continue
            if g.dtype not in DTYPES:
                raise InputError(f"ExactGradAccumulator.add: the gradient of {name} is {g.dtype}; "
                                 f"the exact accumulator adds {SUPPORTED} gradients")
            if g.dtype != p.dtype:
                raise InputError(f"ExactGradAccumulator.add: the gradient of {name} is {g.dtype}, "
                                 f"the parameter {p.dtype}: the result is written in the "
                                 "parameter's dtype")
            if g.device != self._device:
                raise InputError(f"ExactGradAccumulator.add: the gradient of {name} is on "
                                 f"{g.device}, the accumulator on {self._device}")
            if g.is_sparse:
                raise InputError(f"ExactGradAccumulator.add: the gradient of {name} is sparse")
            grads.append((name, p, g))
        if self.record_digests or self.record_dir is not None:
            dtypes = sorted({str(p.dtype) for _, p in self._params})
            if len(dtypes) > 1:
                raise InputError("ExactGradAccumulator: a recorded micro-batch is one array of "
                                 f"one dtype, and these parameters are {', '.join(dtypes)}")
            flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                              for _, p in self._params])
            self.records.append({"micro_batch": self._local_micro_batches,
                                 "digest": digest(flat)})
            if self.record_dir is not None:
                folder = pathlib.Path(self.record_dir)
                folder.mkdir(parents=True, exist_ok=True)
                rank = self.record_rank
                if rank is None:
                    rank = dist.get_rank(self._group) if dist.is_initialized() else 0
                suffix = dtype_name(flat.dtype)
                write_rank_file(folder / f"rank{rank}-mb{self._local_micro_batches:04d}.{suffix}",
                                flat)
        lib = _lib()
        stream = self._stream()
        offsets = dict((id(p), o) for (_, p), o in zip(self._params, self._offsets))
        # On a GPU the adds are enqueued and settled one micro-batch later, by _resolve() (after
        # the next forward pass, or at the next add or reduce): every gradient stays
        # referenced until then.
        added = []
        for name, p, g in grads:
            g = g.detach().contiguous()
            added.append(g)
            _library.check(lib.rv_accumulator_add_dtype(self._handle, g.data_ptr(),
                                                        offsets[id(p)], g.numel(),
                                                        dtype_code(g.dtype), stream))
            p.grad = None
        if self._device.type == "cuda":
            _library.check(lib.rv_accumulator_end_micro_batch_deferred(self._handle))
            self._held = added
        else:
            _library.check(lib.rv_accumulator_end_micro_batch(self._handle))
        del added
        self._local_micro_batches += 1

    def _agreement_buffer(self) -> torch.Tensor:
        """The host buffer of this accumulator's agreement words, made once and reused: a new
        one every step (megabytes for a large model) costs its page faults on the host while
        the GPU waits for the plan."""
        words = self._agreement_words
        if words is None:
            size = _c.c_size_t()
            _library.check(_lib().rv_accumulator_agreement_size(self._handle, _c.byref(size)))
            words = self._agreement_words = torch.empty(size.value, dtype=torch.int64)
        return words

    def _comm_device(self) -> torch.device:
        if dist.is_initialized() and dist.get_backend(self._group) == "nccl":
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")

    def _world(self) -> int:
        return dist.get_world_size(self._group) if dist.is_initialized() else 1

    def _all_reduce(self, tensor: torch.Tensor, op: Any) -> torch.Tensor:
        # Only a world of two or more gets here: a world of one finishes alone (_reduce).
        moved = tensor.to(self._comm_device())
        _collectives.launch_and_wait(dist.all_reduce, moved, op=op, group=self._group)
        return moved

    def reduce(self, mean_over: Optional[int] = None, op: str = "mean") -> int:
        """Combines every rank's sums and writes the result into each p.grad: op "mean" gives
        RN(Σ / mean_over) (mean_over None: the micro-batches added on all ranks), op "sum"
        RN(Σ). Every rank of the group must call it. Returns the micro-batches of all ranks."""
        return _reduce([self], mean_over, op, self._world(), self._all_reduce)

    @staticmethod
    def reduce_together(accumulators: Iterable["ExactGradAccumulator"],
                        mean_over: Optional[int] = None, op: str = "mean") -> int:
        """The same for several accumulators held in one process, as ranks of one world (each
        over the same parameters, and the first one's p.grad receives the result): the
        collectives computed in place. For checks of a grouping in one process."""
        accumulators = list(accumulators)
        if not accumulators:
            raise InputError("ExactGradAccumulator.reduce_together: no accumulator")

        def combine(tensors: List[torch.Tensor], reduction: Any) -> torch.Tensor:
            stacked = torch.stack([t.to(accumulators[0]._device) for t in tensors])
            if reduction == dist.ReduceOp.MAX:
                return stacked.max(dim=0).values
            return stacked.sum(dim=0)
        return _reduce(accumulators, mean_over, op, len(accumulators), None, combine)

    def _check_header(self, header: List[int]) -> None:
        differences = []
        for field, name in enumerate(_HEADER_FIELDS):
            largest, smallest = header[2 * field], -header[2 * field + 1]
            if largest != smallest:
                differences.append(f"{name} (from {smallest} to {largest})")
        if differences:
            raise WorldDisagreement(
                "the ranks' exact gradient accumulators disagree before any gradient moved: "
                + ", ".join(differences) + " (a differing magic: a rank is not reducing an "
                "ExactGradAccumulator)")
        if header[0] != _MAGIC:
            raise WorldDisagreement(f"the agreed accumulator magic is {header[0]:#x}: a rank "
                                    "is not reducing an ExactGradAccumulator")


def _reduce(accumulators: List[ExactGradAccumulator], mean_over: Optional[int], op: str,
            world: int, all_reduce: Optional[Callable[[torch.Tensor, Any], torch.Tensor]],
            combine: Optional[Combine] = None) -> int:
    """The three rounds (docs/DESIGN.md §11) over `all_reduce(tensor, op)` for one accumulator
    of a process group, or over `combine(tensors, op)` for several in one process."""
    if op not in ("mean", "sum"):
        raise InputError(f"ExactGradAccumulator.reduce: op {op!r} (mean or sum)")
    if mean_over is not None and (isinstance(mean_over, bool) or
                                  not isinstance(mean_over, int) or mean_over <= 0):
        raise InputError(f"ExactGradAccumulator.reduce: mean_over = {mean_over!r}: a mean "
                         "over a positive count of micro-batches or samples")
    if mean_over is not None and mean_over > 1 << 20:
        raise InputError(f"ExactGradAccumulator.reduce: mean_over = {mean_over} is beyond 2^20")
    if combine is None:
        if all_reduce is None:
            raise InputError("ExactGradAccumulator: neither an all-reduce nor a combine")
        reduce_one = all_reduce

        def combine(tensors: List[torch.Tensor], reduction: Any) -> torch.Tensor:
            return reduce_one(tensors[0], reduction)
    lib = _lib()
    first = accumulators[0]
    c_op = _library.OP_MEAN if op == "mean" else _library.OP_SUM
    if world == 1 and len(accumulators) == 1:
        outs = _finish_alone(first, lib, c_op, op, mean_over)
        total = first._local_micro_batches
    else:
        outs, total = _combine(accumulators, lib, c_op, op, mean_over, world, combine)
    for (_, p), offset in zip(first._params, first._offsets):
        p.grad = outs[p.dtype][offset:offset + p.numel()].view_as(p)
    for acc in accumulators:
        _library.check(lib.rv_accumulator_clear(acc._handle, acc._stream()))
        acc._local_micro_batches = 0
    return total


def _divisor(accumulator: ExactGradAccumulator, op: str, mean_over: Optional[int],
             total: int) -> int:
    """M, once every rank agreed (an error raised here is raised on every rank)."""
    divisor = mean_over if mean_over is not None else total
    if op == "mean" and divisor == 0:
        raise InputError("ExactGradAccumulator.reduce: no rank added a micro-batch, and "
                         "mean_over is not given: a mean over nothing")
    if accumulator._unsupported:
        raise InputError("ExactGradAccumulator.reduce: parameter(s) "
                         f"{', '.join(accumulator._unsupported)} are not {SUPPORTED}; nothing "
                         "is reduced another way")
    return divisor if op == "mean" else 0


def _finish_alone(acc: ExactGradAccumulator, lib: ctypes.CDLL, c_op: int, op: str,
                  mean_over: Optional[int]) -> Dict[torch.dtype, torch.Tensor]:
    """A world of one: no agreement, plan or digit words (rv_accumulator_finish_alone rounds
    its own sums, on a GPU from the digits in place, enqueued before the last micro-batch is
    resolved). Its results, one tensor per dtype of its parameters."""
    mean_count = _divisor(acc, op, mean_over, acc._local_micro_batches)
    outs = {}
    for dtype in {p.dtype for _, p in acc._params}:
        out = torch.empty(acc.count, dtype=dtype, device=acc._device)
        _library.check(lib.rv_accumulator_finish_alone(acc._handle, c_op, mean_count,
                                                       dtype_code(dtype), out.data_ptr(),
                                                       acc._stream()))
        outs[dtype] = out
    acc._held = None  # finish_alone settled the last micro-batch's adds
    return outs


def _combine(accumulators: List[ExactGradAccumulator], lib: ctypes.CDLL, c_op: int, op: str,
             mean_over: Optional[int], world: int,
             combine: Combine) -> Tuple[Dict[torch.dtype, torch.Tensor], int]:
    """The three rounds over `combine(tensors, op)`: (results per dtype, micro-batches of all
    ranks)."""
    first = accumulators[0]
    words = []
    for acc in accumulators:
        acc._resolve()
        mine = acc._agreement_buffer()
        # mean_over None: the count is known only after the sum, so the header agrees on 0.
        _library.check(lib.rv_accumulator_agreement_words(
            acc._handle, acc._layout, c_op, mean_over or 0, mine.data_ptr(), acc._stream()))
        words.append(mine)
    # Round 1: the header alone (every rank sends the same 10 words, whatever its length).
    header = combine([w[:_HEADER_WORDS].clone() for w in words], dist.ReduceOp.MAX).cpu()
    first._check_header(header.tolist())
    # Round 2: the windows.
    agreed = torch.cat([header, combine([w[_HEADER_WORDS:].clone() for w in words],
                                        dist.ReduceOp.MAX).cpu()])
    digits = []
    for acc in accumulators:
        digit_words = _c.c_size_t()
        _library.check(lib.rv_accumulator_plan(acc._handle, agreed.data_ptr(), world,
                                               _c.byref(digit_words)))
        mine = torch.empty(digit_words.value, dtype=torch.int64, device=acc._device)
        _library.check(lib.rv_accumulator_export_digits(acc._handle, mine.data_ptr(),
                                                        acc._stream()))
        digits.append(mine)
    # Round 3: the digits; word 0 holds the micro-batches of every rank.
    summed = combine(digits, dist.ReduceOp.SUM).to(first._device)
    total = int(summed[0].item())
    mean_count = _divisor(first, op, mean_over, total)
    # One rounding of the whole accumulator per dtype its parameters hold (finishing is a
    # function of the summed words: each pass rounds every element to its dtype).
    outs = {}
    for dtype in {p.dtype for _, p in first._params}:
        out = torch.empty(first.count, dtype=dtype, device=first._device)
        _library.check(lib.rv_accumulator_finish_dtype(first._handle, summed.data_ptr(), c_op,
                                                       mean_count, dtype_code(dtype),
                                                       out.data_ptr(), first._stream()))
        outs[dtype] = out
    return outs, total
