"""The DDP communication hooks: every bucket's all-reduce under the fixed-order or the exact
contract (docs/DESIGN.md §2).

Data flow per bucket of n float32 values on W ranks — the owner dataflow of the core's
reducers (docs/DESIGN.md §5.3), with the process group's own collectives as the byte mover:

1. (per the state's agreement policy) the ranks all-gather and compare a record of the
   bucket: contract, op, W, n, bucket index, step;
2. all_to_all_single sends shard p of every rank's bucket to rank p: rank p then holds a
   W × s table whose row r is rank r's copy of its shard (s = ⌈n / W⌉, rounded up to a
   multiple of 4 so every GPU slot is 16-byte aligned; zero padding is reduced and dropped);
3. rank p reduces its table with our fold (the CPU fold, or the CUDA kernel on the current
   stream) — the only float additions anywhere;
4. all_gather gives every rank every reduced shard, written back into the bucket.

So the bits of each element depend on its W addends and W only: not on the backend, the
library's algorithm or version, the bucket cap, gradient_as_bucket_view or the GPU. Each
rank sends and receives 2 (W − 1) / W · n values, what a ring all-reduce moves, and folds
n / W elements. all_to_all_single and all_gather are byte copies on Gloo and NCCL alike.

The all_to_all is waited for inside the hook before the fold is launched, so that both
collectives are issued from the hook's thread in the same order on every rank. On NCCL that
wait is a stream dependency and the host does not block; on Gloo the backward pass waits for
each bucket's exchange (the gather still overlaps)."""

import torch
import torch.distributed as dist

from .. import _library
from ..errors import InputError, Unsupported
from ..tensors import check_float32, digest, reduce_stacked_into
from .agreement import agree
from .state import HookState

_default_state = None


def fixed_order_hook(state, bucket):
    """DDP communication hook: the bucket's all-reduce under the fixed-order contract."""
    return _reduce_bucket(state, bucket, "fixed-order")


def exact_hook(state, bucket):
    """DDP communication hook: the bucket's all-reduce under the exact contract (each element
    the correctly rounded sum, or mean, of its W addends: bits independent even of which rank
    holds which addend). On a GPU the shard's exact reduction is one kernel on the current
    stream: nothing waits for the device."""
    return _reduce_bucket(state, bucket, "exact")


def _state_of(state):
    global _default_state
    if state is None:
        if _default_state is None:
            _default_state = HookState()
        return _default_state
    if not isinstance(state, HookState):
        raise InputError(f"the hook's state is a {type(state).__name__}; pass "
                         "reduce_verify.ddp.HookState(...) (or None for the default group, mean)")
    return state


def _check_bucket(bucket, buffer, index, with_gradients):
    """`buffer` is a float32 tensor (check_float32 ran first)."""
    # The gradients' devices cost a Python tensor per parameter to read (about 1 µs each), and
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


def shard_length(n, world):
    """s: every rank owns s elements of the padded bucket (W · s ≥ n)."""
    s = -(-n // world)
    return s if world == 1 else -(-s // 4) * 4


def _all_gather_rows(table, row, group):
    """Gathers every rank's `row` into the rows of `table` (W × s), as bytes."""
    if table.is_cuda and hasattr(dist, "all_gather_into_tensor"):
        return dist.all_gather_into_tensor(table.view(-1), row, group=group, async_op=True)
    # Gloo has no all_gather_into_tensor: the list form writes each row in place.
    return dist.all_gather(list(table.unbind(0)), row, group=group, async_op=True)


def _reduce_bucket(state, bucket, contract):
    state = _state_of(state)
    group = state.group()
    buffer = bucket.buffer()
    index = bucket.index()
    check_float32(buffer, f"bucket {index}")
    step = state.step
    recorder = state.recorder
    recording = recorder is not None and recorder.wants(step)
    checking = state.needs_agreement(buffer.device, recording)
    _check_bucket(bucket, buffer, index, with_gradients=checking)
    world = dist.get_world_size(group)
    rank = dist.get_rank(group)
    n = buffer.numel()
    if bucket.is_last():
        state.step += 1

    if checking:
        agree(group, buffer.device, contract, state.op, world, n, index, step, recording)

    inputs = None
    if recording:  # every rank's addends, before anything is overwritten
        inputs = torch.empty((world, n), dtype=torch.float32, device=buffer.device)
        _all_gather_rows(inputs, buffer, group).wait()
        own_input_digest = digest(buffer)

    s = shard_length(n, world)
    padded = world * s
    if padded == n:
        send = buffer
    else:
        send = torch.zeros(padded, dtype=torch.float32, device=buffer.device)
        send[:n].copy_(buffer)
    table = torch.empty((world, s), dtype=torch.float32, device=buffer.device)
    dist.all_to_all_single(table.view(-1), send, group=group, async_op=True).wait()

    # The fold writes the reduced shard over row 0 (an in-place fold into slot 0).
    reduced = table[0]
    reduce_stacked_into(table, world, s, s, state.op, contract, reduced)

    gathered = buffer.view(world, s) if padded == n else torch.empty(
        (world, s), dtype=torch.float32, device=buffer.device)
    gather = _all_gather_rows(gathered, reduced, group)

    def finish(future):
        future.wait()  # raises a failed gather's error here
        if padded != n:
            buffer.copy_(gathered.view(-1)[:n])
        if recording:
            recorder.capture(step=step, bucket=index, rank=rank, world=world, op=state.op,
                             contract=contract, inputs=inputs, own_input_digest=own_input_digest,
                             result=buffer)
        return buffer

    return gather.get_future().then(finish)
