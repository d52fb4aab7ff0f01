"""FSDP2's reduce-scatter under the fixed-order or the exact contract, and exact accumulation of
micro-batches into each rank's shard (docs/fsdp.md; docs/DESIGN.md §2.6, §11).

    reduction = reduce_verify.fsdp.register(model, contract="exact")   # after fully_shard
    for k, (x, y) in enumerate(my_micro_batches):                      # K on this rank
        reduction.micro_batch(last=k == K - 1)
        loss_fn(model(x), y).backward()
    optimizer.step()

register() gives every FSDPModule of the tree (FSDPModule.set_custom_reduce_scatter, NEEDS below)
its own ReduceScatter. FSDP hands it each backward pass's gradients of one module as a flat
input laid out (W, s) (row p: rank p's shard, zero padded) and an output of s elements. The data
path is the DDP hooks' (ddp/hooks.py): all_to_all_single gives rank p the W × s table of its
shard (row r from rank r), and the table is reduced elementwise by the stacked fold or the
stacked exact reduction, so each shard element has the bits the all-reduce of the same contract
gives at that index (DESIGN §2.6).

register() has FSDP scale nothing and pass SUM (every dtype: float16's pre- and post-division
too), and the comm applies register's op: the mean over W (or over the step's micro-batches),
or the sum. Called otherwise, the comm reads ops as FSDP passes them: AVG (the mean over W),
SUM, PREMUL_SUM(1 / n) for an integer n (the mean over n: exact only, unless n is W or 1). Any
other op is refused by name.

Accumulation (exact only): between micro_batch(last=False) and the last micro-batch, every
micro-batch's table is added, row by row, into an exact accumulator of the shard (the C ABI's
rv_accumulator: one int64 digit an element for gradient-like data), FSDP receives zeros, and the
last micro-batch finishes RN(Σ / M) into the shard, M the micro-batches of every rank of the
step: the bits ExactGradAccumulator gives under DDP and one process gives for the same M
micro-batches. A rank with fewer micro-batches (an uneven split) still runs a backward pass for
each of FSDP's collectives, with micro_batch(..., contributes=False): its rows are not added.

Before any gradient moves, the ranks all-gather a record (contract, op, W, lengths, dtype, the
call's index, the micro-batch's place in its step) and every rank raises the same
WorldDisagreement naming the ranks that differ; an op, dtype or mode this module does not define
is refused after that agreement, so on every rank. Nothing falls back to FSDP's own reduction.

register(..., trail=) records every call in a reduce_verify.Trail (Trail.wrap_reduce_scatter);
register(..., recorder=) dumps the chosen steps' calls for replay (Recorder.wrap_reduce_scatter).
FSDP1 (FullyShardedDataParallel): register_fsdp1 and fsdp1_hook, the same comm as its sharded
strategies' comm hook, one reduce-scatter per backward pass."""

import ctypes
from typing import Any, List, Optional, Tuple

import torch
import torch.distributed as dist

from . import _collectives, _library
from .ddp.agreement import _wait
from .errors import InputError, Unsupported, WorldDisagreement, WorldTimeout
from .tensors import DTYPES, SUPPORTED, check_raw, reduce_stacked_into

CONTRACTS = ("fixed-order", "exact")
_MAGIC = 0x52564653  # "RVFS"
FIELDS = ("magic", "contract", "FSDP settings", "op", "divisor", "world", "input length",
          "output length", "dtype", "call", "accumulating", "micro-batch", "last",
          "micro_batch() missed", "contributes")
_PER_RANK = ("contributes",)  # fields that may differ between ranks (an uneven split)
# What register() set on FSDP, or refuses to see set: the reduced gradients pass FSDP unscaled.
_SETTINGS = ("set_gradient_divide_factor (register set 1.0)",
             "set_force_sum_reduction_for_comms (register set True)",
             "set_all_reduce_hook (register saw none)")
_OP_SUM, _OP_MEAN, _OP_UNDEFINED = 0, 1, -1
_MAX_DIVISOR = 1 << 20  # the exact contract's mean (DESIGN §11)
# The torches it was run on; older ones may have the setter too (torch 1.13 has no FSDP2).
NEEDS = "torch 2.11 or 2.13"


def _minimum_torch() -> Any:
    try:
        from torch.distributed.fsdp import FSDPModule
    except Exception:  # torch 1.13's fsdp package raises ValueError on import under Python 3.11
        raise Unsupported(f"reduce_verify.fsdp needs FSDP2 (torch.distributed.fsdp.FSDPModule "
                          f"with set_custom_reduce_scatter: {NEEDS}); this is torch "
                          f"{torch.__version__}") from None
    if not hasattr(FSDPModule, "set_custom_reduce_scatter"):
        raise Unsupported(f"torch {torch.__version__}'s FSDPModule has no "
                          f"set_custom_reduce_scatter ({NEEDS})")
    return FSDPModule


def _param_groups(module: Any) -> List[Any]:
    """The FSDP module's parameter groups: a list from torch 2.13 on (per-parameter meshes may
    make several), one group or None in torch 2.11."""
    state = module._get_fsdp_state()
    groups = getattr(state, "_fsdp_param_groups", None)
    if groups is not None:
        return list(groups)
    one = getattr(state, "_fsdp_param_group", None)
    return [] if one is None else [one]


def parse_op(op: Any, world: int, sum_means: str = "sum") -> Tuple[int, int, str]:
    """(op code, divisor, name) of a ReduceOp FSDP passes: AVG is a mean over W, SUM what
    `sum_means` says (register() has FSDP pass SUM and scale nothing: "mean" is then the mean
    over W), PREMUL_SUM(f) a sum when f is 1 and a mean over n when f is exactly 1 / n;
    anything else (code _OP_UNDEFINED) is refused once the ranks agreed."""
    kind = getattr(op, "op", op)  # a ReduceOp with a factor carries its RedOpType in .op
    factor = getattr(op, "factor", None)
    name = str(kind).split(".")[-1]
    if kind == dist.ReduceOp.SUM:
        return (_OP_MEAN, world, name) if sum_means == "mean" else (_OP_SUM, 0, name)
    if kind == dist.ReduceOp.AVG:
        return _OP_MEAN, world, name
    if kind == dist.ReduceOp.PREMUL_SUM and isinstance(factor, float) and factor > 0:
        if factor == 1.0:
            return _OP_SUM, 0, f"PREMUL_SUM({factor!r})"
        n = round(1.0 / factor)
        if 1 <= n <= _MAX_DIVISOR and 1.0 / n == factor:
            return _OP_MEAN, n, f"PREMUL_SUM({factor!r})"
        return _OP_UNDEFINED, 0, f"PREMUL_SUM({factor!r})"
    return _OP_UNDEFINED, 0, name if factor is None else f"{name}({factor!r})"


class ReduceScatter:
    """The reduce-scatter one FSDPModule calls (torch's ReduceScatter protocol: allocate and
    __call__). Made by register(); one per module, since each holds its module's shard
    accumulator."""

    def __init__(self, contract: str, name: str, reduction: "FSDPReduction", sum_means: str,
                 param_group: Any = None):
        self.contract = contract
        self.name = name
        self.sum_means = sum_means
        self._reduction = reduction
        self._param_group = param_group  # FSDP's FSDPParamGroup, whose settings are checked
        self.group: Optional[dist.ProcessGroup] = None  # FSDP1's, which its hook does not pass
        self._calls = 0
        self._serial_seen = 0  # the FSDPReduction's micro_batch() serial this comm last reduced
        self._accumulator: Optional[ctypes.c_void_p] = None
        self._accumulator_shape: Tuple[int, str] = (0, "")
        self._step_addends = 0  # rows added since the step's first micro-batch

    def __del__(self) -> None:
        if self._accumulator:
            _library.library().rv_accumulator_destroy(self._accumulator)
            self._accumulator = None

    def allocate(self, size: Any, *, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(self, output_tensor: torch.Tensor, input_tensor: torch.Tensor,
                 group: Optional[dist.ProcessGroup], op: Any, async_op: bool = False) -> Any:
        if async_op:
            raise Unsupported(f"{self.name}: reduce_verify.fsdp reduces synchronously; FSDP "
                              "passed async_op=True")
        world = dist.get_world_size(group)
        code, divisor, op_name = parse_op(op, world, self.sum_means)
        settings = self._settings()
        phase = self._reduction._phase
        # A second backward pass under one micro_batch() call (it was not called before this
        # one): an error, agreed on like the rest.
        serial = self._reduction._serial
        repeated = int(phase is not None and serial == self._serial_seen)
        self._serial_seen = serial
        dtype = DTYPES[input_tensor.dtype][0] if input_tensor.dtype in DTYPES else -1
        call = self._calls
        self._calls += 1
        record = [_MAGIC, CONTRACTS.index(self.contract), settings, code, divisor, world,
                  input_tensor.numel(), output_tensor.numel(), dtype, call,
                  int(phase is not None), phase[0] if phase else 0,
                  int(phase[1]) if phase else 0, repeated, int(phase[2]) if phase else 1]
        rows = self._agree(record, group, input_tensor.device)
        what = f"{self.name} (call {call})"
        # The ranks hold the same record: what follows raises on every rank or on none.
        if settings:
            changed = [text for bit, text in enumerate(_SETTINGS) if settings >> bit & 1]
            raise InputError(f"{what}: FSDP's {', '.join(changed)} changed after register(): "
                             "FSDP would scale or reduce the gradients itself; nothing falls "
                             "back to FSDP's reduction")
        if repeated:
            raise InputError(f"{what}: a second backward pass since the last "
                             "FSDPReduction.micro_batch(): call it before every backward pass "
                             "while accumulating (or plain() to stop)")
        if dtype < 0:
            raise InputError(f"{what}: the gradients are {input_tensor.dtype}; the contracts "
                             f"are defined on {SUPPORTED} only (MixedPrecisionPolicy("
                             "reduce_dtype=...) picks the reduce dtype), nothing is converted")
        if code == _OP_UNDEFINED:
            raise InputError(f"{what}: ReduceOp {op_name} is not defined by reduce_verify "
                             "(AVG, SUM, PREMUL_SUM(1 / n)); nothing falls back to FSDP's "
                             "reduction")
        if input_tensor.numel() != world * output_tensor.numel():
            raise InputError(f"{what}: the input holds {input_tensor.numel()} elements, not "
                             f"W = {world} times the output's {output_tensor.numel()}")
        accumulating = phase is not None
        if self.contract == "fixed-order" and code == _OP_MEAN and divisor != world:
            raise InputError(f"{what}: {op_name} is a mean over {divisor}; fixed-order defines "
                             f"the mean over the ranks (W = {world}) only: use the exact contract")
        if accumulating and divisor not in (0, world):
            raise InputError(f"{what}: {op_name} during accumulation; the accumulated mean is "
                             "over the step's micro-batches (AVG, or SUM for the sum)")
        for tensor, role in ((input_tensor, "input"), (output_tensor, "output")):
            check_raw(tensor, f"{what}'s {role}")
        s = output_tensor.numel()
        table = torch.empty((world, s), dtype=input_tensor.dtype, device=input_tensor.device)
        _collectives.launch(dist.all_to_all_single, _collectives.wire(table.view(-1)),
                            _collectives.wire(input_tensor.reshape(-1)), group=group).wait()
        if not accumulating and divisor in (0, world):
            reduce_stacked_into(table, world, s, s, "mean" if code == _OP_MEAN else "sum",
                                self.contract, output_tensor)
            return None
        contributors = [r for r, row in enumerate(rows) if row[FIELDS.index("contributes")]]
        self._add_rows(table, contributors)
        if phase is not None and not phase[1]:
            output_tensor.zero_()  # FSDP adds it to the shard's gradient, set to None at last
            return None
        count = self._step_addends if accumulating else divisor
        self._step_addends = 0
        if code == _OP_MEAN and count == 0:
            self._clear(output_tensor)
            raise InputError(f"{what}: no rank contributed a micro-batch to this step: a mean "
                             "over nothing")
        self._finish(output_tensor, code, count)
        return None

    def _settings(self) -> int:
        """The FSDP settings register() made that have changed since, as bits of _SETTINGS."""
        group = self._param_group
        if group is None:
            return 0
        return (int(group.gradient_divide_factor != 1.0) |
                int(not group.force_sum_reduction_for_comms) << 1 |
                int(getattr(group, "_all_reduce_hook", None) is not None) << 2)

    def _agree(self, record: List[int], group: Optional[dist.ProcessGroup],
               device: torch.device) -> List[List[int]]:
        world = dist.get_world_size(group)
        comm_device = device if _collectives.completes_at_launch(group) else torch.device("cpu")
        mine = torch.tensor(record, dtype=torch.int64, device=comm_device)
        gathered = [torch.empty_like(mine) for _ in range(world)]
        work = _collectives.launch(dist.all_gather, gathered, mine, group=group)
        call = record[FIELDS.index("call")]
        timeout = self._reduction.agreement_timeout
        try:
            _wait(work, comm_device, timeout, call, call)
        except WorldTimeout as error:
            raise WorldTimeout(
                f"the ranks' agreement on call {call} of {self.name}'s reduce-scatter did not "
                f"complete within {timeout:g} s (register(agreement_timeout=...)): a rank runs "
                "FSDP's own reduce-scatter or another comm, has stopped, or is further behind; "
                "the process group cannot be used after this: let the process exit") from error
        rows = [row.tolist() for row in gathered]
        compared = [[v for f, v in zip(FIELDS, row) if f not in _PER_RANK] for row in rows]
        if any(row != compared[0] for row in compared):
            raise WorldDisagreement(self._describe(rows))
        return rows

    def _describe(self, rows: List[List[int]]) -> str:
        differences = []
        for field, name in enumerate(FIELDS):
            if name in _PER_RANK:
                continue
            holders: dict = {}
            for rank, row in enumerate(rows):
                holders.setdefault(row[field], []).append(rank)
            if len(holders) > 1:
                held = "; ".join(f"rank(s) {', '.join(map(str, ranks))}: {value}"
                                 for value, ranks in sorted(holders.items(), key=lambda h: h[1]))
                differences.append(f"{name} ({held})")
        return (f"the ranks disagree on the reduce-scatter of {self.name} before any gradient "
                f"moved: {', '.join(differences)}")

    def _stream(self, tensor: torch.Tensor) -> Optional[int]:
        return torch.cuda.current_stream(tensor.device).cuda_stream if tensor.is_cuda else None

    def _add_rows(self, table: torch.Tensor, contributors: List[int]) -> None:
        lib = _library.library()
        s = table.shape[1]
        shape = (s, str(table.device))
        if self._accumulator is None or self._accumulator_shape != shape:
            if self._accumulator is not None:
                lib.rv_accumulator_destroy(self._accumulator)
            handle = ctypes.c_void_p()
            device = -1
            if table.is_cuda:
                device = table.device.index if table.device.index is not None else \
                    torch.cuda.current_device()
            _library.check(lib.rv_accumulator_create(s, device, ctypes.byref(handle)))
            self._accumulator, self._accumulator_shape = handle, shape
        dtype = DTYPES[table.dtype][0]
        stream = self._stream(table)
        # Each run of consecutive contributing ranks is one add of that many rows (on a GPU one
        # launch, where row by row each add would wait for the last).
        for first, rows in _runs(contributors):
            _library.check(lib.rv_accumulator_add_rows(
                self._accumulator, table[first].data_ptr(), table.stride(0), rows, 0, s, dtype,
                stream))
            self._step_addends += rows
        # Settles the adds (on a GPU they read the table until then).
        _library.check(lib.rv_accumulator_end_micro_batch(self._accumulator))

    def _finish(self, output: torch.Tensor, code: int, count: int) -> None:
        lib = _library.library()
        out = output if output.is_contiguous() else torch.empty(
            output.shape, dtype=output.dtype, device=output.device)
        c_op = _library.OP_MEAN if code == _OP_MEAN else _library.OP_SUM
        _library.check(lib.rv_accumulator_finish_alone(
            self._accumulator, c_op, count if code == _OP_MEAN else 0, DTYPES[output.dtype][0],
            out.data_ptr(), self._stream(output)))
        if out is not output:
            output.copy_(out)
        self._clear(output)

    def _clear(self, output: torch.Tensor) -> None:
        if self._accumulator is not None:
            _library.check(_library.library().rv_accumulator_clear(self._accumulator,
                                                                   self._stream(output)))


def _runs(indices: List[int]) -> List[Tuple[int, int]]:
    """Ascending indices as (first, count) runs: [0, 1, 3] -> [(0, 2), (3, 1)]."""
    runs: List[Tuple[int, int]] = []
    for i in indices:
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    return runs


class FSDPReduction:
    """What register() returns: the modules' reduce-scatters, and the micro-batch phase they
    follow."""

    def __init__(self, contract: str, agreement_timeout: float):
        self.contract = contract
        self.agreement_timeout = agreement_timeout
        self.comms: List[ReduceScatter] = []
        self._parameters: List[torch.nn.Parameter] = []
        # None: every backward pass is one reduce-scatter; else (micro-batch k of the step,
        # last, contributes) for the next backward pass.
        self._phase: Optional[Tuple[int, bool, bool]] = None
        self._next_micro_batch = 0
        self._serial = 0  # micro_batch() calls: a comm that sees one twice missed a call
        self.fsdp1 = False  # register_fsdp1's: one reduce-scatter per backward pass only

    def micro_batch(self, last: bool, contributes: bool = True) -> None:
        """Call before each micro-batch's backward pass: its gradients are accumulated exactly
        into every rank's shard, and the backward pass of the micro-batch with last=True (the
        same on every rank) finishes RN(Σ / M) into the shards' gradients, M the micro-batches
        of every rank with contributes=True. A rank without a micro-batch left runs a backward
        pass anyway (FSDP's collectives need every rank) with contributes=False."""
        if self.contract != "exact":
            raise InputError(f"accumulation over micro-batches is exact only; this reduction is "
                             f"{self.contract}")
        if self.fsdp1:
            raise InputError("accumulation over micro-batches needs FSDP2 (fully_shard): "
                             "FSDP1 adds each backward pass's shard to the last in float")
        self._phase = (self._next_micro_batch, bool(last), bool(contributes))
        self._next_micro_batch += 1
        self._serial += 1
        if last:
            # The last output is assigned, not added to the zeros of the earlier ones (0 + -0
            # would be +0 where the exact mean is -0).
            for p in self._parameters:
                p.grad = None
            self._next_micro_batch = 0

    def plain(self) -> None:
        """Back to one reduce-scatter per backward pass (the state before micro_batch())."""
        self._phase = None
        self._next_micro_batch = 0


def register(model: torch.nn.Module, contract: str = "fixed-order", op: str = "mean",
             agreement_timeout: float = 300.0, trail: Any = None,
             recorder: Any = None) -> FSDPReduction:
    """Gives every FSDPModule in `model` (fully_shard applied) a reduce-scatter under
    `contract`, after checking what it will reduce: one parameter group per module (FSDP's
    setter refuses several), parameters and reduce dtype float32, bfloat16 or float16, cpu or
    cuda, a one-dimensional mesh of two ranks or more (HSDP would all-reduce our shards in
    float; a world of one calls no reduce-scatter). Raises InputError naming the module or
    parameter; sets nothing unless every module passes. op "mean" (FSDP's default: over the W
    ranks, or over the step's micro-batches when accumulating) or "sum".

    FSDP is set to scale nothing itself (set_gradient_divide_factor(1.0),
    set_force_sum_reduction_for_comms(True): it then passes SUM in every dtype, and float16's
    pre- and post-division are gone), so the mean is the contract's, rounded once. Changing those
    settings afterwards is refused at the next reduce-scatter. trail: a reduce_verify.Trail
    that records every call's input and shard digests as the step's buckets (its end_step
    takes model.parameters(): FSDP's are digested whole). recorder: a reduce_verify.Recorder
    that dumps the calls of its chosen steps for `reduce-verify replay` (its end_step() counts
    the steps). Returns the FSDPReduction whose micro_batch() drives exact accumulation."""
    fsdp_module = _minimum_torch()
    if contract not in CONTRACTS:
        raise InputError(f"contract {contract!r}: fixed-order or exact")
    if op not in ("mean", "sum"):
        raise InputError(f"op {op!r}: mean or sum")
    if not dist.is_initialized():
        raise InputError("torch.distributed has no process group: init_process_group first")
    modules = [(name or "<root>", m) for name, m in model.named_modules()
               if isinstance(m, fsdp_module)]
    if not modules:
        raise InputError(f"{type(model).__name__} holds no FSDPModule: apply fully_shard first")
    reduction = FSDPReduction(contract, agreement_timeout)
    chosen = []
    for name, module in modules:
        groups = _param_groups(module)
        if len(groups) > 1:
            raise InputError(f"FSDP module {name} has {len(groups)} parameter groups (per-"
                             "parameter meshes): FSDP takes one custom reduce-scatter per module")
        if not groups:
            continue
        group = groups[0]
        mesh_info = group.mesh_info
        if hasattr(mesh_info, "replicate_process_group") or not hasattr(mesh_info,
                                                                        "shard_mesh_size"):
            raise InputError(f"FSDP module {name} is on a {type(mesh_info).__name__} mesh: "
                             "HSDP and replication would all-reduce the shards in float "
                             "(one-dimensional FSDP meshes only)")
        if mesh_info.shard_mesh_size < 2:
            raise InputError(f"FSDP module {name} is sharded over one rank: FSDP calls no "
                             "reduce-scatter there (ExactGradAccumulator serves a world of one)")
        policy = group.mp_policy
        for fsdp_param in group.fsdp_params:
            p = fsdp_param.sharded_param
            where = f"parameter {fsdp_param._module_info.param_name} of FSDP module {name}"
            reduce_dtype = policy.reduce_dtype or policy.param_dtype or p.dtype
            for dtype, role in ((p.dtype, "is"), (reduce_dtype, "reduces in")):
                if p.requires_grad and dtype not in DTYPES:
                    raise InputError(f"{where} {role} {dtype}; the contracts are defined on "
                                     f"{SUPPORTED} only, and nothing is converted silently")
            if p.device.type not in ("cpu", "cuda"):
                raise InputError(f"{where} is on {p.device}; cpu and cuda are supported")
            if p.device.type == "cuda" and not _library.built_with_cuda():
                raise Unsupported(f"{where} is on {p.device}, but this libreduce_verify_c.so "
                                  f"was built without CUDA ({_library.library_info()})")
            reduction._parameters.append(p)
        chosen.append((name, module, group))
    for name, module, group in chosen:
        comm = ReduceScatter(contract, name, reduction, op, group)
        module.set_gradient_divide_factor(1.0)
        module.set_force_sum_reduction_for_comms(True)
        outer: Any = comm if recorder is None else recorder.wrap_reduce_scatter(comm)
        if trail is not None:
            outer = trail.wrap_reduce_scatter(
                outer, f"reduce_verify.fsdp.ReduceScatter({contract}, {op})",
                [fsdp_param.sharded_param for fsdp_param in group.fsdp_params])
        module.set_custom_reduce_scatter(outer)
        reduction.comms.append(comm)
    return reduction


def fsdp1_hook(state: ReduceScatter, grad: torch.Tensor,
               output: Optional[torch.Tensor] = None) -> None:
    """FSDP1's communication hook (FullyShardedDataParallel.register_comm_hook) for its sharded
    strategies: FSDP1 hands the padded flat gradient and the shard to fill, divides nothing
    itself when a hook is registered, and the comm (`state`, made by register_fsdp1) reduces
    as FSDP2's does."""
    if output is None:
        raise InputError(f"{state.name}: FSDP1 passed no shard (NO_SHARD all-reduces): "
                         "reduce_verify.fsdp1_hook serves FULL_SHARD and SHARD_GRAD_OP")
    state(output, grad, state.group, dist.ReduceOp.SUM)


def register_fsdp1(model: torch.nn.Module, contract: str = "fixed-order", op: str = "mean",
                   agreement_timeout: float = 300.0) -> FSDPReduction:
    """For users of FSDP1 (FullyShardedDataParallel; torch 2.x): registers fsdp1_hook with a
    comm under `contract` on the root, after checking the sharding strategy (FULL_SHARD or
    SHARD_GRAD_OP: the hybrid ones all-reduce in float, NO_SHARD passes no shard), the
    parameters' and the reduce dtype (float32, bfloat16, float16). One reduce-scatter per
    backward pass: exact accumulation needs FSDP2. Clip with
    reduce_verify.clip_grad_norm_(model.parameters(), max_norm, group=model.process_group):
    FSDP1's parameters are plain tensors holding this rank's shard."""
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
    except Exception:  # torch 1.13's fsdp package raises ValueError on import under Python 3.11
        raise Unsupported(f"torch {torch.__version__}'s FSDP1 does not import here") from None
    if contract not in CONTRACTS:
        raise InputError(f"contract {contract!r}: fixed-order or exact")
    if op not in ("mean", "sum"):
        raise InputError(f"op {op!r}: mean or sum")
    if not isinstance(model, FullyShardedDataParallel):
        raise InputError(f"the model is a {type(model).__name__}; register_fsdp1 takes the root "
                         "FullyShardedDataParallel")
    for instance in FullyShardedDataParallel.fsdp_modules(model):
        strategy = instance.sharding_strategy
        if strategy not in (ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP):
            raise InputError(f"an FSDP1 instance uses {strategy}: register_fsdp1 serves "
                             "FULL_SHARD and SHARD_GRAD_OP")
        policy = instance.mixed_precision
        reduce_dtype = getattr(policy, "reduce_dtype", None) if policy is not None else None
        if reduce_dtype is not None and reduce_dtype not in DTYPES:
            raise InputError(f"an FSDP1 instance reduces in {reduce_dtype}; the contracts are "
                             f"defined on {SUPPORTED} only")
    for name, p in model.named_parameters():
        if p.requires_grad and p.dtype not in DTYPES:
            raise InputError(f"parameter {name} is {p.dtype}; the contracts are defined on "
                             f"{SUPPORTED} only, and nothing is converted silently")
    reduction = FSDPReduction(contract, agreement_timeout)
    reduction.fsdp1 = True
    comm = ReduceScatter(contract, "FSDP1", reduction, op)
    comm.group = model.process_group
    model.register_comm_hook(comm, fsdp1_hook)
    reduction.comms.append(comm)
    return reduction
