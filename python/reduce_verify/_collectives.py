"""The one door through which every collective of the package goes (the DDP hooks, their
agreement, the Trail, the ExactGradAccumulator), and the one policy that keeps a process
group's teardown from hanging on them.

Why. On Gloo (and any backend whose works complete on the process group's own threads) a
collective's work, and the tensors handed to it, are also referenced by the worker thread that
runs it, which lets them go only after it has marked the work complete. If the caller has
already dropped its references by then (a blocking collective returns as soon as the work is
complete), the worker drops the last one: freeing a tensor that has a Python object needs the
GIL there (TensorImpl::destroy_pyobj_if_needed). A teardown that joins the workers while
holding the GIL then never returns: dist.destroy_process_group(), or ~Reducer destroying the
process group when the DDP model goes, hangs; during the interpreter's finalisation the worker
cannot take the GIL at all and the process aborts ("terminate called without an active
exception"). The same holds for a future a worker completes: its Python callbacks run there,
holding the GIL, and whatever they free is freed there.

So every collective is launched with async_op=True and its work and arguments (every tensor,
and the lists of tensors) go into a bounded ring: the last RING_LENGTH collectives stay
referenced here, long after their workers let them go, and the main thread, not a worker,
drops them when newer ones push them out. From the interpreter's exit on the ring is never
emptied (it is made immortal, and unbounded): nothing of it is freed while the process ends.

The exception, NCCL: its works are marked complete when the collective is enqueued, in the
calling thread (CUDA events order what follows), so a callback runs in the caller's thread and
the host never waits for the device; its tensors are the GPU's buckets, which the ring would
keep alive for nothing. They are not kept (completes_at_launch).

What the ring cannot hold: another's hook that chains a Python callback to a Gloo future (torch's
own default_hooks.allreduce_hook does: `.then(lambda fut: ...)`). The worker runs that callback
and then destroys it, which takes the GIL again (torch's PythonFunctionGuard), after the future
is complete: a teardown right after can still meet a worker waiting for the GIL (torch 1.13, 4 of
80 worlds of DDP with allreduce_hook alone, no reduce_verify code, at W = 4 on the 2-core VM).
drain() ends that: Gloo's barrier waits for every work launched on the group before it, to the
end of its callbacks, while this thread waits without the GIL. The Trail drains at close()."""

import atexit
import collections
import ctypes
from typing import Any, Callable, Deque, Optional, Tuple

import torch
import torch.distributed as dist

# In collectives (each one entry). The hooks issue up to four a bucket (agreement, the
# recorded step's gather, exchange, gather), the trail two a step, the accumulator three a
# reduce: 16 keeps the last few buckets' (what the hooks kept before, four buckets) while a
# model's tensors do not stay pinned for many steps.
RING_LENGTH = 16

_ring: Deque[Tuple[Any, ...]] = collections.deque(maxlen=RING_LENGTH)


@atexit.register
def _keep_past_exit() -> None:
    """From here on nothing leaves the ring: a bucket's collectives issued during the exit
    (a last backward pass under an atexit handler) are kept as well, and the ring itself
    outlives the module's teardown (one reference that is never dropped)."""
    global _ring
    _ring = collections.deque(_ring)  # unbounded
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_ring))


def completes_at_launch(group: Optional[dist.ProcessGroup]) -> bool:
    """Whether the group's works complete in the calling thread when launched (NCCL), rather
    than on one of the group's own worker threads (Gloo)."""
    return dist.get_backend(group) == "nccl"


def keep(group: Optional[dist.ProcessGroup], *objects: Any) -> None:
    """Keeps `objects` (works, futures, tensors, lists of tensors) in the ring, unless the
    group's works complete at launch."""
    if not completes_at_launch(group):
        _ring.append(objects)


def wire(tensor: torch.Tensor) -> torch.Tensor:
    """What a collective moves for `tensor`: float32 as it is; bfloat16 and float16 as their
    bytes (a view), since Gloo has no bfloat16 and a byte copy is all the exchange does."""
    return tensor if tensor.dtype == torch.float32 else tensor.view(torch.uint8)


def all_gather_rows(table: torch.Tensor, row: torch.Tensor,
                    group: Optional[dist.ProcessGroup]) -> Any:
    """Launches the gather of every rank's `row` into the rows of `table` (W × s), as bytes;
    returns the work."""
    table, row = wire(table), wire(row)
    if table.is_cuda and hasattr(dist, "all_gather_into_tensor"):
        return launch(dist.all_gather_into_tensor, table.view(-1), row, group=group)
    # Gloo has no all_gather_into_tensor: the list form writes each row in place.
    return launch(dist.all_gather, list(table.unbind(0)), row, group=group)


def launch(collective: Callable[..., Any], *args: Any,
           group: Optional[dist.ProcessGroup] = None, **kwargs: Any) -> Any:
    """`collective(*args, group=group, async_op=True, **kwargs)` (a torch.distributed
    collective: all_gather, all_to_all_single, all_reduce, ...), its work and every argument
    kept in the ring (see the module's doc). Returns the work."""
    work = collective(*args, group=group, async_op=True, **kwargs)
    keep(group, work, args, tuple(kwargs.values()))
    return work


def launch_and_wait(collective: Callable[..., Any], *args: Any,
                    group: Optional[dist.ProcessGroup] = None, **kwargs: Any) -> None:
    """launch(), then waits for the work (on NCCL, a stream dependency: the host does not
    wait for the device)."""
    launch(collective, *args, group=group, **kwargs).wait()


def drain(group: Optional[dist.ProcessGroup]) -> None:
    """On a group whose works complete on its workers (Gloo), a barrier, waited for: Gloo's
    barrier first waits for every work queued or running on the group to finish (their
    futures' callbacks run and destroyed), and this thread waits without the GIL, so a worker
    that still needs it gets it. Every rank of the group must call it. Nothing on NCCL."""
    if not completes_at_launch(group):
        launch_and_wait(dist.barrier, group=group)


def settled(future: torch.futures.Future, group: Optional[dist.ProcessGroup],
            *tensors: Any) -> torch.futures.Future:
    """A future of another's hook (torch's allreduce_hook, say), made safe to chain a Python
    callback to: one not complete yet would complete on a worker thread and run the callback
    there, so it is waited for here (its error raised here); kept in the ring with `tensors`
    (the bucket's) as a collective's work is. A future complete already (NCCL's, or a hook's
    that waited, as fixed_order_hook's on Gloo) is not waited for."""
    if not future.done():
        future.wait()
    keep(group, future, tensors)
    return future
