"""The DDP communication hooks: every bucket's all-reduce under the fixed-order or the exact
contract (docs/DESIGN.md §2).

Data flow per bucket of n values (float32, bfloat16 or float16) on W ranks — the owner dataflow of the core's
reducers (docs/DESIGN.md §5.3), with the process group's own collectives as the byte mover:

1. (per the state's agreement policy) the ranks all-gather and compare a record of the
   bucket: contract, op, W, n, bucket index, step;
2. all_to_all_single sends shard p of every rank's bucket to rank p: rank p then holds a
   W × s table whose row r is rank r's copy of its shard (s = ⌈n / W⌉, rounded up to a
   multiple of 4 so every GPU slot is 16-byte aligned; zero padding is reduced and dropped);
3. rank p reduces its table with our fold (the CPU fold, or the CUDA kernel on the current
   stream) — the only float additions anywhere;
4. all_gather gives every rank every reduced shard, written back into the bucket.

A bfloat16 or float16 bucket moves its own 2-byte elements (as bytes: Gloo has no bfloat16
type, and a copy needs none): the shard's reduction widens them exactly, folds (or sums
exactly) and rounds once to the bucket's dtype (docs/DESIGN.md §2.5), and the result is
written back in that dtype. Any other dtype is refused with InputError naming it, before
anything moves.

So the bits of each element depend on its W addends and W only: not on the backend, the
library's algorithm or version, the bucket cap, gradient_as_bucket_view or the GPU. Each
rank sends and receives 2 (W − 1) / W · n values, what a ring all-reduce moves, and folds
n / W elements. all_to_all_single and all_gather are byte copies on Gloo and NCCL alike.

The all_to_all is waited for inside the hook before the fold is launched, so that both
collectives are issued from the hook's thread in the same order on every rank. On NCCL that
wait is a stream dependency and the host does not block; on Gloo the backward pass waits for
each bucket's exchange and gather, and the future the hook returns is already complete (see
the end of _reduce_bucket for why)."""

import warnings
from typing import Any, Callable, Dict, Optional

import torch
import torch.distributed as dist

from .. import _collectives, _library
from ..errors import InputError, ReduceVerifyError, Unsupported
from ..tensors import SUPPORTED, DTYPES, check_reducible, reduce_stacked_into
from .agreement import agree
from .state import HookState, resolve_state

Hook = Callable[[Optional[HookState], dist.GradBucket], torch.futures.Future[torch.Tensor]]


# The annotations are DDP's: register_comm_hook compares them with dist.GradBucket and
# torch.futures.Future[torch.Tensor].
def fixed_order_hook(state: Optional[HookState],
                     bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: the bucket's all-reduce under the fixed-order contract."""
    return _hook(state, bucket, "fixed-order", fixed_order_hook)


def exact_hook(state: Optional[HookState],
               bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: the bucket's all-reduce under the exact contract (each element
    the correctly rounded sum, or mean, of its W addends: bits independent even of which rank
    holds which addend). On a GPU the shard's exact reduction is one kernel on the current
    stream: nothing waits for the device."""
    return _hook(state, bucket, "exact", exact_hook)


HOOKS: Dict[Hook, str] = {fixed_order_hook: "fixed-order", exact_hook: "exact"}


def register(model: torch.nn.parallel.DistributedDataParallel, hook: Hook = fixed_order_hook,
             state: Optional[HookState] = None) -> HookState:
    """`model.register_comm_hook(state, hook)` after the checks the first bucket would make,
    so that a model the hooks cannot reduce raises here, as the exception it is, and not
    inside the first backward pass (where torch turns it into a RuntimeError): every
    parameter that needs a gradient float32, bfloat16 or float16 (DDP buckets each dtype
    apart), all on one cpu or cuda device, a library built
    with CUDA for cuda, a HookState, an initialised process group. `hook` is
    fixed_order_hook, exact_hook, or either wrapped by a Recorder (Recorder.wrap). With a
    Recorder (wrapping the hook, or in the state) it also counts forward passes, to warn when
    steps are not what the recorder counts (gradient accumulation). Returns the state."""
    if not isinstance(model, torch.nn.parallel.DistributedDataParallel):
        raise InputError(f"the model is a {type(model).__name__}; register the hook on the "
                         "torch.nn.parallel.DistributedDataParallel that wraps it")
    if getattr(hook, "__wrapped__", hook) not in HOOKS:
        raise InputError(f"hook {getattr(hook, '__name__', hook)!r} is neither "
                         "reduce_verify.ddp.fixed_order_hook nor exact_hook (nor one of them "
                         "wrapped by Recorder.wrap)")
    state = HookState() if state is None else resolve_state(state)
    if not dist.is_initialized():
        raise InputError("torch.distributed has no process group: call "
                         "dist.init_process_group(...) before wrapping the model in DDP")
    trained = [(name, p) for name, p in model.module.named_parameters() if p.requires_grad]
    wrong = [f"{name} ({p.dtype})" for name, p in trained if p.dtype not in DTYPES]
    if wrong:
        shown = ", ".join(wrong[:5]) + (f" and {len(wrong) - 5} more" if len(wrong) > 5 else "")
        raise InputError(f"{len(wrong)} parameter(s) are not {SUPPORTED}: {shown}; "
                         "reduce-verify's contracts are defined on binary32, bfloat16 and "
                         "binary16 only, and nothing is converted silently")
    devices = sorted({str(p.device) for _, p in trained})
    if len(devices) > 1:
        raise InputError(f"the parameters lie on {', '.join(devices)}; the hooks reduce each "
                         "bucket on one device")
    for device in {p.device for _, p in trained}:
        if device.type not in ("cpu", "cuda"):
            raise InputError(f"the parameters are on {device}; cpu and cuda are supported")
        if device.type == "cuda" and not _library.built_with_cuda():
            raise Unsupported(f"the parameters are on {device}, but this libreduce_verify_c.so "
                              f"was built without CUDA ({_library.library_info()})")
    model.register_comm_hook(state, hook)
    if state.recorder is not None or getattr(hook, "recorder", None) is not None:
        state._counts_forwards = True
        model.register_forward_pre_hook(lambda module, inputs: _count_forward(state))
    return state


def _count_forward(state: HookState) -> None:
    state._forwards += 1


def _hook(state: Optional[HookState], bucket: dist.GradBucket, contract: str,
          hook: Hook) -> torch.futures.Future[torch.Tensor]:
    state = resolve_state(state)
    if state.recorder is not None and state.recording is None:
        # HookState(recorder=...): the call goes through the recorder's wrapper, which
        # sets state.recording and calls this hook again.
        return state.recorder.wrap(hook)(state, bucket)
    try:
        return _reduce_bucket(state, bucket, contract)
    except ReduceVerifyError as error:
        state.error = error  # what state.original_errors() raises instead of torch's wrapper
        raise


def _check_bucket(bucket: dist.GradBucket, buffer: torch.Tensor, index: int,
                  with_gradients: bool) -> None:
    """`buffer` is a tensor of a supported dtype (check_reducible ran first)."""
    # The gradients' devices cost a Python tensor per parameter to read, and
    # DDP fixes each bucket's parameters, on one device, when it rebuilds its buckets after
    # the first step: they are read while the layout may still change (the agreement's steps).
    if with_gradients:
        devices = {buffer.device} | {g.device for g in bucket.gradients()}
        if len(devices) > 1:
            names = ", ".join(sorted(str(d) for d in devices))
            raise InputError(f"bucket {index} mixes devices ({names}); one bucket is reduced "
                             "on one device")
    if not buffer.is_contiguous():
        raise InputError(f"bucket {index}'s buffer is not contiguous")
    if buffer.device.type == "cuda" and not _library.built_with_cuda():
        raise Unsupported(f"bucket {index} is on {buffer.device}, but this "
                          f"libreduce_verify_c.so was built without CUDA "
                          f"({_library.library_info()})")
    if buffer.device.type not in ("cpu", "cuda"):
        raise InputError(f"bucket {index} is on {buffer.device}; cpu and cuda are supported")


def shard_length(n: int, world: int) -> int:
    """s: every rank owns s elements of the padded bucket (W · s ≥ n)."""
    s = -(-n // world)
    return s if world == 1 else -(-s // 4) * 4


def _reduce_bucket(state: HookState, bucket: dist.GradBucket,
                   contract: str) -> torch.futures.Future[torch.Tensor]:
    group = state.group()
    buffer = bucket.buffer()
    index = bucket.index()
    check_reducible(buffer, f"bucket {index}")
    dtype = buffer.dtype
    step = state.step
    recording = bool(state.recording)  # a Recorder's wrapper records this bucket
    checking = state.needs_agreement(buffer.device, recording)
    _check_bucket(bucket, buffer, index, with_gradients=checking)
    world = dist.get_world_size(group)
    n = buffer.numel()
    if bucket.is_last():
        _step_done(state, step)

    if checking:
        agree(group, buffer.device, contract, state.op, world, n, index, step, recording,
              state.agreement_timeout, DTYPES[dtype][0])

    if world == 1:
        # A world of one: the exchange and the gather are the identity, so the bucket is
        # reduced in place (the law still applied to its one addend, as the contract rounds
        # it) and no collective moves it.
        reduce_stacked_into(buffer, 1, n, n, state.op, contract, buffer)
        done: torch.futures.Future[torch.Tensor] = torch.futures.Future()
        done.set_result(buffer)
        return done

    s = shard_length(n, world)
    padded = world * s
    if padded == n:
        send = buffer
    else:
        send = torch.zeros(padded, dtype=dtype, device=buffer.device)
        send[:n].copy_(buffer)
    table = torch.empty((world, s), dtype=dtype, device=buffer.device)
    _collectives.launch(dist.all_to_all_single, _collectives.wire(table.view(-1)),
                        _collectives.wire(send), group=group).wait()

    # The fold writes the reduced shard over row 0 (an in-place fold into slot 0).
    reduced = table[0]
    reduce_stacked_into(table, world, s, s, state.op, contract, reduced)

    gathered = buffer.view(world, s) if padded == n else torch.empty(
        (world, s), dtype=dtype, device=buffer.device)
    gather = _collectives.all_gather_rows(gathered, reduced, group)

    def finish() -> torch.Tensor:
        if padded != n:
            buffer.copy_(gathered.view(-1)[:n])
        return buffer

    if _collectives.completes_at_launch(group):
        def after_gather(future: torch.futures.Future[Any]) -> torch.Tensor:
            future.wait()  # raises a failed gather's error here
            return finish()
        return gather.get_future().then(after_gather)
    # Elsewhere (Gloo) the work's future is completed by one of the process group's worker
    # threads, which would run a Python callback there: that thread then needs the GIL, and
    # a teardown that joins it while holding the GIL (destroy_process_group, or the
    # interpreter's exit destroying a live DDP model) deadlocks or aborts (_collectives says
    # more). So the gather is waited for here, and the bucket's future is complete before the
    # hook returns: nothing of a step is left in flight once its backward pass has returned.
    gather.wait()
    done = torch.futures.Future()
    done.set_result(finish())
    return done


def _step_done(state: HookState, step: int) -> None:
    state.step = step + 1
    if state._counts_forwards:
        if state._forwards > 1 and not state._accumulation_warned:
            state._accumulation_warned = True
            warnings.warn(
                f"reduce_verify: step {step} took {state._forwards} forward passes (gradient "
                "accumulation under no_sync()?): the Recorder's steps count synchronised "
                "backward passes, i.e. optimizer steps, not forward passes", RuntimeWarning,
                stacklevel=3)
        state._forwards = 0
