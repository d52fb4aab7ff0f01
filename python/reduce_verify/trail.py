"""Trail: an always-on digest trail of a DDP training run, for `reduce-verify audit A B`.

Per step and per bucket it keeps every rank's input digest and every rank's reduced-result
digest; after the optimizer step, the parameters' digest (and, optionally, the optimizer
state's). Rank 0 appends one JSON line per step to one file; each line is chained to the one
before by hash, so an edited, reordered or truncated trail is found and named by the audit
(docs/DESIGN.md §12, docs/audit.md).

    trail = reduce_verify.Trail("run-a.trail")
    ddp.register_comm_hook(state, trail.wrap(fixed_order_hook))   # or any hook, e.g.
    # ddp.register_comm_hook(None, trail.wrap(default_hooks.allreduce_hook))
    for step ...:
        loss.backward(); optimizer.step()
        trail.end_step(model.parameters(), optimizer)
    trail.close()

Every rank keeps the same chain head (they all see the gathered digests), so any rank's
state_dict() resumes the chain."""

import concurrent.futures
import ctypes
import functools
import os
import pathlib
import threading
import weakref
from typing import (Any, Callable, Dict, Iterable, List, Literal, Optional, Sequence, Tuple,
                    Union)

import torch
import torch.distributed as dist

from . import _collectives, _library
# The chain's names, also as trail.* (tests and the format's readers of the package use them).
from ._chain import CHAIN_SUFFIX_LENGTH, GENESIS, ChainWriter, chain_next, chained_line  # noqa: F401
from .errors import InputError, InternalError, WorldDisagreement
from .tensors import digest_at, digest_bytes, flat_digest as _flat_digest, host_bytes

FORMAT = "reduce-verify trail"
VERSION = 1
TREE_LEAF_BYTES = 1 << 12  # docs/DESIGN.md §12: the digest tree's leaf size
KIND_FLAT = "xxh128"
KIND_TREE = "xxh3-tree-4k"


def flat_digest(tensor: torch.Tensor) -> bytes:
    """XXH3-128 of the tensor's bytes, row-major, zero-padded to a multiple of 4
    (docs/DESIGN.md §12): for float32, what `reduce-verify digest` and `xxh128sum` print for
    the same bytes (tensors.flat_digest, the package's one digest)."""
    return _flat_digest(tensor, 4)


def tree_digest(tensor: torch.Tensor) -> bytes:
    """The digest tree of docs/DESIGN.md §12 (the CPU reference): the tensor's bytes
    zero-padded to whole 4 KiB leaves, XXH3-128 of each leaf, then XXH3-128 of the unpadded
    byte count as u64 little-endian followed by the leaves' canonical digests. Every leaf is
    the same length, so a device hashes them in parallel where the tensor lives
    (tree_digest_cuda); this reference gives the bits it must give."""
    raw = host_bytes(tensor, 4)
    size = raw.numel()
    if size % TREE_LEAF_BYTES:
        raw = torch.cat([raw, torch.zeros(-size % TREE_LEAF_BYTES, dtype=torch.uint8)])
    leaves = [digest_at(raw.data_ptr() + offset, TREE_LEAF_BYTES)
              for offset in range(0, raw.numel(), TREE_LEAF_BYTES)]
    return digest_bytes(size.to_bytes(8, "little") + b"".join(leaves))


class PendingTree:
    """A digest tree whose leaves a GPU is hashing: into its own device uint8 tensor `leaves`,
    or into a step's LeafArena (`arena`, its 8-byte size slot at `arena_at`, the leaves right
    after it). `keep` holds the tensors the kernel reads until it ran (temporary contiguous
    copies). A step's trees are copied to the host together (StepCopy), behind the step's
    work; root() hashes u64_le(size) and the leaves there once the copy is done."""

    def __init__(self, size: int, leaves: Optional[torch.Tensor],
                 keep: Optional[List[torch.Tensor]] = None,
                 arena: Optional["LeafArena"] = None, arena_at: int = 0):
        self.size, self.leaves, self.keep = size, leaves, keep
        self.arena, self.arena_at = arena, arena_at
        self.leaf_bytes = _leaf_bytes(size)
        device = arena.device if arena is not None else leaves.device if leaves is not None \
            else None
        if device is None:
            raise InternalError("a PendingTree needs its leaves' tensor or an arena")
        self.device: torch.device = device
        self.copy: Optional["StepCopy"] = None  # the StepCopy that holds its leaves on the host
        self.at = 0  # where u64_le(size) and the leaves start in that copy's buffer

    def own_leaves(self) -> torch.Tensor:
        """The leaves' own tensor of a tree outside an arena."""
        if self.leaves is None:
            raise InternalError("a PendingTree in an arena, or finished, has no leaves of its own")
        return self.leaves

    def root(self) -> bytes:
        """The 16-byte root: waits for the step's copy (long done where the caller is a step
        later), writes u64_le(size) into the 8 bytes before the leaves there, and hashes
        both on the host."""
        if self.copy is None:
            raise RuntimeError("PendingTree.root() before its step's copy was queued")
        self.copy.wait()
        self.leaves = self.keep = self.arena = None
        at = self.copy.host.data_ptr() + self.at
        ctypes.memmove(at, self.size.to_bytes(8, "little"), 8)
        return digest_at(at, 8 + self.leaf_bytes)


class LeafArena:
    """One step's leaf digests on one device in one device buffer, each tree's leaves after an
    8-byte slot for its size (filled on the host): the step's digests need no allocation each
    and go to the host in one copy. Sized from the step before (the buckets repeat); a tree
    that does not fit gets its own tensor."""

    def __init__(self, device: torch.device, capacity: int):
        self.device = device
        self.tensor = torch.empty(capacity, dtype=torch.uint8, device=device)
        self.base = self.tensor.data_ptr()
        self.capacity, self.used = capacity, 0

    def take(self, leaf_bytes: int) -> Optional[int]:
        """The offset of a tree's size slot (its leaves 8 bytes later), or None when full."""
        if self.used + 8 + leaf_bytes > self.capacity:
            return None
        at, self.used = self.used, self.used + 8 + leaf_bytes
        return at


class StepCopy:
    """The leaves of one step's trees on one device, copied into one pinned host buffer on the
    trail's copy stream behind the work the current stream and the side stream hold now: one
    host allocation and one event a step, and one copy per leaf arena (trees outside one, one
    copy each), so a small step's host time stays small. Each tree's bytes are laid out as an
    8-byte slot for u64_le(size) (written by root()) then its leaves."""

    def __init__(self, trees: List[PendingTree],
                 streams: Tuple["torch.cuda.Stream", "torch.cuda.Stream"]):
        device = trees[0].device
        side, copy = streams
        arenas: Dict[int, LeafArena] = {}
        for tree in trees:
            if tree.arena is not None:
                arenas.setdefault(id(tree.arena), tree.arena)
        alone = [t for t in trees if t.arena is None]
        self.host = torch.empty(sum(a.used for a in arenas.values()) +
                                sum(8 + t.leaf_bytes for t in alone), dtype=torch.uint8,
                                pin_memory=True)
        copy.wait_stream(torch.cuda.current_stream(device))
        copy.wait_stream(side)
        at, based = 0, {}
        self.done: Optional[torch.cuda.Event] = None
        with torch.cuda.stream(copy):
            for key, arena in arenas.items():
                if arena.used:
                    self.host[at:at + arena.used].copy_(arena.tensor[:arena.used],
                                                        non_blocking=True)
                based[key], at = at, at + arena.used
            for tree in alone:
                count = tree.leaf_bytes
                if count:
                    self.host[at + 8:at + 8 + count].copy_(tree.own_leaves(),
                                                           non_blocking=True)
                tree.copy, tree.at = self, at
                at += 8 + count
            for tree in trees:
                if tree.arena is not None:
                    tree.copy, tree.at = self, based[id(tree.arena)] + tree.arena_at
            self.done = torch.cuda.Event()
            self.done.record(copy)

    def wait(self) -> None:
        if self.done is not None:
            self.done.synchronize()
            self.done = None


# A digest as the trail holds it: 16 bytes, or a tree whose leaves a GPU is hashing.
Digest = Union[bytes, PendingTree]
# Trail._arena_slot: (device, leaf bytes) -> (arena, offset) or None.
ArenaSlots = Callable[[torch.device, int], Optional[Tuple[LeafArena, int]]]
# A DDP communication hook, ours or anyone's (its state may be of any type).
Hook = Callable[[Any, dist.GradBucket], torch.futures.Future[torch.Tensor]]


@functools.lru_cache(maxsize=None)  # one library a process: looked up once
def _cuda_function(name: str) -> Optional[Callable[..., int]]:
    """The C ABI's digest-tree kernel `name`, or None (an older or CPU-only library)."""
    if not _library.built_with_cuda():
        return None
    return _library.optional(name)


def _cuda_leaf_function() -> Optional[Callable[..., int]]:
    """rv_cuda_digest_tree_leaves, or None."""
    return _cuda_function("rv_cuda_digest_tree_leaves")


def _cuda_pieces_function() -> Optional[Callable[..., int]]:
    """rv_cuda_digest_tree_leaves_of_pieces, or None."""
    return _cuda_function("rv_cuda_digest_tree_leaves_of_pieces")


def _leaf_bytes(size: int) -> int:
    """The leaf digests' bytes of a tree over `size` bytes: 16 a 4 KiB leaf."""
    return 16 * (-(-size // TREE_LEAF_BYTES))


def _leaf_destination(device: torch.device, size: int, arenas: Optional[ArenaSlots]
                      ) -> Tuple[int, Optional[torch.Tensor], Tuple[Optional[LeafArena], int]]:
    """Where the leaves of a tree over `size` bytes go: (device address, their own tensor or
    None, (arena, offset) or (None, 0)), in the step's arena when `arenas` (Trail._arena_slot)
    has room, else in a tensor of their own."""
    slot = arenas(device, _leaf_bytes(size)) if arenas is not None else None
    if slot is None:
        leaves = torch.empty(_leaf_bytes(size), dtype=torch.uint8, device=device)
        return leaves.data_ptr(), leaves, (None, 0)
    arena, at = slot
    return arena.base + at + 8, None, slot


def tree_digest_cuda_pieces(tensors: Sequence[torch.Tensor], function: Callable[..., int],
                            arenas: Optional[ArenaSlots] = None) -> Optional[PendingTree]:
    """The tree of the concatenation of CUDA tensors of one dtype on one device, read in place
    (no concatenated copy): a PendingTree, as tree_digest_cuda of torch.cat of their flattened
    values would give; None where a tensor's bytes are not 4-byte words at a 4-byte aligned
    address (the caller concatenates)."""
    # A contiguous tensor's bytes are read where they are; only others are copied (and kept).
    flats = [t if t.is_contiguous() else t.detach().contiguous() for t in tensors]
    table = (ctypes.c_uint64 * (2 * len(flats)))()
    size = 0
    for k, flat in enumerate(flats):
        nbytes = flat.numel() * flat.element_size()
        if nbytes % 4 or flat.data_ptr() % 4:
            return None
        table[2 * k], table[2 * k + 1] = flat.data_ptr(), nbytes
        size += nbytes
    device = flats[0].device
    address, leaves, slot = _leaf_destination(device, size, arenas)
    stream = torch.cuda.current_stream(device).cuda_stream
    _library.check(function(device.index if device.index is not None else
                            torch.cuda.current_device(), table, len(flats),
                            address if size else None, stream))
    return PendingTree(size, leaves, flats, *slot)


def tree_digest_cuda(tensor: torch.Tensor, function: Callable[..., int],
                     arenas: Optional[ArenaSlots] = None) -> Digest:
    """Enqueues the leaves of a CUDA tensor's tree on its current stream (no copy of the
    tensor leaves the device); a PendingTree, or the host reference's digest where the
    tensor's bytes are not 4-byte words at a 4-byte aligned address."""
    # A contiguous tensor's bytes are read where they are: no dispatch to flatten it (a
    # small step is bound by the host, and this runs for every bucket twice).
    flat = tensor if tensor.is_contiguous() else tensor.detach().contiguous()
    size = flat.numel() * flat.element_size()
    if size % 4 or flat.data_ptr() % 4:
        return tree_digest(flat)
    address, leaves, slot = _leaf_destination(flat.device, size, arenas)
    device = flat.device.index if flat.device.index is not None else torch.cuda.current_device()
    stream = torch.cuda.current_stream(flat.device).cuda_stream
    _library.check(function(device, flat.data_ptr() if size else None, size,
                            address if size else None, stream))
    return PendingTree(size, leaves, None, *slot)


def _side_future(device: torch.device) -> torch.futures.Future[torch.Tensor]:
    """The future the trail hands DDP for a bucket hashed on `device`: CUDA-aware, so that
    completing it with the side stream current records its event there."""
    return torch.futures.Future(devices=[device])


def finish_trees(digests: List[Digest]) -> List[bytes]:
    """The list with every PendingTree replaced by its 16-byte root: one device-to-host copy
    of all their leaf digests, the roots hashed on the host."""
    pending = [d for d in digests if isinstance(d, PendingTree)]
    roots: Dict[int, bytes] = {}
    if pending:
        host = torch.cat([p.own_leaves() for p in pending]).cpu()
        raw = ctypes.string_at(host.data_ptr(), host.numel()) if host.numel() else b""
        at = 0
        for p in pending:
            count = p.own_leaves().numel()
            roots[id(p)] = digest_bytes(p.size.to_bytes(8, "little") + raw[at:at + count])
            at += count
    return [roots[id(d)] if isinstance(d, PendingTree) else d for d in digests]


def hook_name(hook: Callable[..., Any]) -> str:
    return f"{getattr(hook, '__module__', '?')}.{getattr(hook, '__qualname__', repr(hook))}"


class Trail:
    """The trail of one run. Every rank constructs it with the same path; rank 0 (`writer`)
    writes. `digest="auto"` digests CPU tensors with the full XXH3-128 and CUDA tensors with
    the digest tree; "flat" or "tree" forces one kind for every tensor."""

    def __init__(self, path: Union[str, "os.PathLike[str]"],
                 process_group: Optional[dist.ProcessGroup] = None, digest: str = "auto",
                 optimizer_state: bool = False, writer: int = 0):
        if digest not in ("auto", "flat", "tree"):
            raise InputError(f"digest {digest!r} is not one of auto, flat, tree")
        self.path = pathlib.Path(path)
        self.process_group = process_group
        self.digest = digest
        self.optimizer_state = optimizer_state
        self.writer = writer
        self._chain = ChainWriter(self.path)  # the head and record count, on every rank
        self.step = 0
        self.hooks: List[str] = []
        self._kind: Optional[str] = None
        self._lock = threading.Lock()
        # bucket index → (numel, input digest, result digest, its parameters' ids in order)
        self._buckets: Dict[int, Tuple[int, Digest, Digest, Tuple[int, ...]]] = {}
        # The last step, while its GPU digests are still on their way.
        self._pending: Optional[_StepDigests] = None
        self._cuda_streams: Dict[torch.device, Tuple[Any, Any]] = {}  # (side, copy) streams
        # A Gloo group beside an NCCL one, for the digests (False: torch has no Gloo).
        self._gather_group: Union[None, Literal[False], dist.ProcessGroup] = None
        # The worker thread that hashes a deferred step's roots.
        self._hasher: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._guarded_optimizers: Dict[int, Any] = {}  # id → weakref of a guarded optimizer
        self._side_of: Dict[torch.device, Any] = {}  # device → its side stream or None
        self._arenas: Dict[torch.device, LeafArena] = {}  # this step's arenas
        self._arena_demand: Dict[torch.device, int] = {}  # leaf bytes this step asked for
        self._arena_sizes: Dict[torch.device, int] = {}  # the next step's arenas' capacity
        # Bucket parameter orders (ids) → their layouts; emptied by wrap(), since a new DDP's
        # parameters may reuse a freed model's ids.
        self._layouts: Dict[Tuple[int, ...], bytes] = {}

    # --- the hooks ---------------------------------------------------------------------
    def wrap(self, hook: Hook, name: Optional[str] = None) -> Hook:
        """A DDP communication hook that runs `hook` and records the bucket's input digest
        (before the hook, which may change the buffer in place) and its result's digest."""
        self._layouts.clear()
        self.hooks.append(name or hook_name(hook))

        # The annotations are DDP's: register_comm_hook compares them with dist.GradBucket and
        # torch.futures.Future[torch.Tensor].
        def trail_hook(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
            buffer = bucket.buffer()
            index = bucket.index()
            # Which parameters, in which order: DDP's first iteration and its
            # rebuilt buckets can hold the same count in another order (the record's "layout").
            order = tuple(id(p) for p in bucket.parameters())
            side = self._side_stream(buffer)
            if side is None:
                input_digest = self._digest(buffer)

                def after(done: torch.futures.Future[Any]) -> torch.Tensor:
                    value = done.value()
                    result = value[0] if isinstance(value, (list, tuple)) else value
                    self._record_bucket(index, buffer, input_digest, self._digest(result),
                                        order)
                    return result

                # A future still running (torch's allreduce_hook on Gloo) is waited for here,
                # so that `after` runs in this thread and never on a process group's worker
                # (_collectives says why a worker must not run Python).
                future = _collectives.settled(hook(state, bucket), self.process_group, buffer)
                return future.then(after)
            # On a GPU the bucket is hashed, and the hook runs, on the trail's side stream
            # behind the bucket's gradients: the rest of the backward pass goes on beside them,
            # and the hook's collective (which waits for the stream current when it is called)
            # still reads the buffer only once its input digest is taken.
            side.wait_stream(torch.cuda.current_stream(buffer.device))
            with torch.cuda.stream(side):
                input_digest = self._digest(buffer)
                # NCCL's futures are complete at launch (nothing waits); a backend's that
                # completes on its workers (Gloo over CUDA tensors) is waited for here.
                future = _collectives.settled(hook(state, bucket), self.process_group, buffer)
            # The result is hashed on the side stream too, and DDP gets a future completed
            # there: DDP's wait at the end of the backward pass orders its use of the result
            # behind the hook's work and the digest, while the backward pass runs beside them
            # (a hook's completed plain future, torch's noop hook's or fixed_order_hook's,
            # would otherwise run this callback on the compute stream).
            reduced = _side_future(buffer.device)

            def after_on_side(done: torch.futures.Future[Any]) -> None:
                try:
                    value = done.value()
                    result = value[0] if isinstance(value, (list, tuple)) else value
                    # Behind the stream this callback runs on (which waited for the hook's
                    # future) and the hook's own work on the side stream.
                    side.wait_stream(torch.cuda.current_stream(result.device))
                    with torch.cuda.stream(side):
                        self._record_bucket(index, buffer, input_digest,
                                            self._digest(result), order)
                        reduced.set_result(result)  # its event is recorded on the side stream
                except Exception as error:  # DDP's wait raises it
                    reduced.set_exception(error)  # type: ignore[arg-type]  # torch stub: T

            future.then(after_on_side)
            return reduced

        trail_hook.__name__ = trail_hook.__qualname__ = f"trail({self.hooks[-1]})"
        return trail_hook

    def wrap_reduce_scatter(self, comm: Any, name: str,
                            parameters: Sequence[torch.Tensor] = ()) -> "TrailedReduceScatter":
        """An FSDP2 reduce-scatter (torch's ReduceScatter protocol, for
        FSDPModule.set_custom_reduce_scatter) that runs `comm` and records each call as the
        step's next bucket: every rank's input digest (its gradients laid out (W, s)) and its
        shard's digest. `parameters`: the module's, in FSDP's order (the bucket's layout).
        reduce_verify.fsdp.register(..., trail=) wraps its comms so."""
        self._layouts.clear()
        if name not in self.hooks:
            self.hooks.append(name)
        return TrailedReduceScatter(self, comm, tuple(id(p) for p in parameters))

    def _record_call(self, numel: int, input_digest: Digest, result_digest: Digest,
                     order: Tuple[int, ...]) -> None:
        """A reduce-scatter call, recorded as the step's next bucket (FSDP calls its modules'
        reduce-scatters in one order on every rank)."""
        with self._lock:
            self._buckets[len(self._buckets)] = (numel, input_digest, result_digest, order)

    def _record_bucket(self, index: int, buffer: torch.Tensor, input_digest: Digest,
                       result_digest: Digest, order: Tuple[int, ...]) -> None:
        with self._lock:
            self._buckets[index] = (buffer.numel(), input_digest, result_digest, order)

    def _digest(self, tensor: torch.Tensor) -> Digest:
        """16 bytes, or a PendingTree whose leaves are on their way to the host (CUDA
        tensors, tree digest)."""
        kind = self._kind_for(tensor)
        if kind == KIND_FLAT:
            return flat_digest(tensor)
        if tensor.device.type == "cuda":
            leaves = _cuda_leaf_function()
            if leaves is not None:
                return tree_digest_cuda(tensor, leaves, self._arena_slot)
        return tree_digest(tensor)

    def _arena_slot(self, device: torch.device,
                    leaf_bytes: int) -> Optional[Tuple[LeafArena, int]]:
        """(arena, offset) for a tree's size slot and leaves in this step's arena on `device`,
        or None (the first step, or a step that outgrew the last one's: its own tensor)."""
        with self._lock:
            self._arena_demand[device] = self._arena_demand.get(device, 0) + 8 + leaf_bytes
            arena = self._arenas.get(device)
            if arena is None:
                capacity = self._arena_sizes.get(device, 0)
                if capacity == 0:
                    return None
                arena = self._arenas[device] = LeafArena(device, capacity)
            at = arena.take(leaf_bytes)
            return None if at is None else (arena, at)

    def _close_arenas(self) -> None:
        """Ends this step's arenas (their trees keep them until their roots are hashed) and
        sizes the next step's from what this one asked for."""
        with self._lock:
            for device, demand in self._arena_demand.items():
                wanted = demand + demand // 4 + 4096
                self._arena_sizes[device] = max(self._arena_sizes.get(device, 0), wanted)
            self._arenas, self._arena_demand = {}, {}

    def _queue_copies(self, digests: List[Digest]) -> None:
        """Queues the copy of the step's pending trees to the host: one StepCopy a device."""
        by_device: Dict[torch.device, List[PendingTree]] = {}
        for d in digests:
            if isinstance(d, PendingTree):
                by_device.setdefault(d.device, []).append(d)
        for device, trees in by_device.items():
            StepCopy(trees, self._streams(device))

    def _streams(self, device: torch.device
                 ) -> Tuple["torch.cuda.Stream", "torch.cuda.Stream"]:
        """(side, copy): the trail's two CUDA streams on `device`, made on first use."""
        with self._lock:
            streams = self._cuda_streams.get(device)
            if streams is None:
                streams = (torch.cuda.Stream(device), torch.cuda.Stream(device))
                self._cuda_streams[device] = streams
            return streams

    def _side_stream(self, buffer: torch.Tensor) -> Optional["torch.cuda.Stream"]:
        """The side stream for a bucket hashed on a GPU, else None; decided once a device (the
        kind, once chosen, does not change)."""
        device = buffer.device
        if device in self._side_of:
            return self._side_of[device]
        side = None
        if device.type == "cuda" and self._kind_for(buffer) == KIND_TREE:
            side = self._streams(device)[0] if _cuda_leaf_function() is not None else None
        self._side_of[device] = side
        return side

    def _kind_for(self, tensor: torch.Tensor) -> str:
        if self.digest == "flat":
            kind = KIND_FLAT
        elif self.digest == "tree":
            kind = KIND_TREE
        else:
            kind = KIND_TREE if tensor.device.type == "cuda" else KIND_FLAT
        if self._kind is None:
            self._kind = kind
        elif self._kind != kind:
            raise InputError(f"this trail digests with {self._kind}, and a {tensor.device} "
                             f"tensor would take {kind}: pass digest='flat' or 'tree'")
        return kind

    # --- the step ----------------------------------------------------------------------
    def _layout(self, order: Tuple[int, ...], given: List[torch.Tensor]) -> bytes:
        """The bucket's layout, computed once per parameter order: DDP keeps a bucket's order
        from its rebuild on, so later steps look it up instead of mapping every parameter."""
        layout = self._layouts.get(order)
        if layout is None:
            layout = _layout_of(order, {id(p): i for i, p in enumerate(given)})
            self._layouts[order] = layout
        return layout

    def end_step(self, parameters: Iterable[torch.Tensor],
                 optimizer: Optional[torch.optim.Optimizer] = None) -> None:
        """After the optimizer step, on every rank: digests the parameters (and the optimizer
        state), gathers every rank's digests (two all_gathers of fixed-size records) and
        appends the step's record (rank 0). Where digests are computed on a GPU, the record is
        written at the next end_step (or state_dict(), close()): this step's leaves are copied
        to the host behind its work, and the host never waits for the step it just enqueued.
        Given the optimizer (torch 2.x), the parameters are hashed on the trail's side stream
        beside the next forward pass, and the optimizer's next step waits for that (a step
        pre-hook): code that writes parameters outside the optimizer before its next step
        passes no optimizer here (docs/DESIGN.md §12, Streams)."""
        given = list(parameters)
        # FSDP's DTensor parameters are digested whole (an all-gather, on every rank): the
        # digest a DDP run or one process gives for the same values.
        parameters = [p.full_tensor().detach() if hasattr(p, "full_tensor") else p.detach()
                      for p in given]
        side = self._parameter_stream(parameters, optimizer)
        if side is None:
            digests = self._parameter_digests(parameters, optimizer)
        else:
            side.wait_stream(torch.cuda.current_stream(parameters[0].device))
            with torch.cuda.stream(side):
                digests = self._parameter_digests(parameters, optimizer)
        with self._lock:
            buckets, self._buckets = sorted(self._buckets.items()), {}
        for _, (_, input_digest, result_digest, _) in buckets:
            digests += [input_digest, result_digest]
        self._close_arenas()
        self._queue_copies(digests)
        step = _StepDigests(self.step, [(index, numel, self._layout(order, given))
                                        for index, (numel, _, _, order) in buckets],
                            digests, sum(p.numel() for p in parameters),
                            self.optimizer_state and optimizer is not None)
        if step.deferred:
            step.start(self._worker())
        previous, self._pending = self._pending, step if step.deferred else None
        if previous is not None:
            self._write(previous)
        if not step.deferred:
            self._write(step)
        self.step += 1

    def _parameter_digests(self, parameters: List[torch.Tensor],
                           optimizer: Optional[torch.optim.Optimizer]) -> List[Digest]:
        digests = [self._digest_many(parameters)]
        if self.optimizer_state and optimizer is not None:
            digests.append(self._digest_many(_optimizer_tensors(optimizer), parameters))
        else:
            digests.append(bytes(16))
        return digests

    def _parameter_stream(self, parameters: List[torch.Tensor],
                          optimizer: Optional[torch.optim.Optimizer]
                          ) -> Optional["torch.cuda.Stream"]:
        """The side stream where the parameters (and the optimizer's state) may be hashed
        beside the next step's forward pass, else None (the compute stream): only on one GPU,
        with the tree kind, and with an optimizer whose step can be made to wait for the side
        stream first (a step pre-hook, torch >= 2.0): its next step writes what is read."""
        if not parameters or optimizer is None or \
                not hasattr(optimizer, "register_step_pre_hook"):
            return None
        device = parameters[0].device
        if any(p.device != device for p in parameters) or self._side_stream(parameters[0]) is None:
            return None
        guarded = self._guarded_optimizers.get(id(optimizer))
        if guarded is None or guarded() is not optimizer:
            trail = weakref.ref(self)

            def wait_for_side(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
                owner = trail()
                if owner is not None:
                    owner._wait_for_side_streams()
            optimizer.register_step_pre_hook(wait_for_side)
            self._guarded_optimizers[id(optimizer)] = weakref.ref(optimizer)
        return self._streams(device)[0]

    def _wait_for_side_streams(self) -> None:
        """Every device's current stream waits for the trail's side stream there (enqueued:
        the host does not wait)."""
        with self._lock:
            streams = list(self._cuda_streams.items())
        for device, (side, _) in streams:
            torch.cuda.current_stream(device).wait_stream(side)

    def _worker(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._hasher is None:
            self._hasher = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="reduce-verify-trail")
        return self._hasher

    def _flush(self) -> None:
        """Writes the step whose GPU digests were still pending."""
        pending, self._pending = self._pending, None
        if pending is not None:
            self._write(pending)

    def _write(self, step: "_StepDigests") -> None:
        digests = step.finish()
        # Each rank sends its two parameter digests, then per bucket 56 bytes: index, numel,
        # layout (8 bytes each), input digest, result digest.
        own = bytearray(digests[0] + digests[1])
        for b, (index, numel, layout) in enumerate(step.buckets):
            own += index.to_bytes(8, "little") + numel.to_bytes(8, "little") + layout
            own += digests[2 + 2 * b] + digests[3 + 2 * b]
        gathered = self._gather(bytes(own), len(step.buckets), step.step)
        world = len(gathered)
        record: Dict[str, Any] = {"step": step.step, "buckets": []}
        for b, (index, numel, layout) in enumerate(step.buckets):
            at = 32 + 56 * b
            rows = [g[at:at + 56] for g in gathered]
            if len({row[:24] for row in rows}) != 1:
                raise WorldDisagreement(f"step {step.step}: the ranks' bucket {b} differ in "
                                        "index, size or parameters: not one DDP world?")
            record["buckets"].append({"index": index, "numel": numel, "layout": layout.hex(),
                                      "inputs": [row[24:40].hex() for row in rows],
                                      "results": [row[40:56].hex() for row in rows]})
        record["params"] = [g[:16].hex() for g in gathered]
        if step.optimizer:
            record["optimizer"] = [g[16:32].hex() for g in gathered]
        if self.records == 0:
            self._append(self._header(world, step.parameters, step.step))
        self._append(record)

    def _digest_many(self, tensors: List[torch.Tensor],
                     like: Optional[List[torch.Tensor]] = None) -> Digest:
        """The digest of the concatenation of `tensors` (flattened): on a GPU with the tree
        kind, read in place as pieces where they share a dtype and device; otherwise of their
        torch.cat (float32 where the dtypes differ from `like`'s, as the optimizer's state)."""
        if not tensors:
            device = like[0].device if like else torch.device("cpu")
            return self._digest(torch.zeros(0, device=device))
        first = tensors[0]
        same = all(t.dtype == first.dtype and t.device == first.device for t in tensors)
        if like is not None:
            same = same and first.dtype == torch.float32 and first.device == like[0].device
        if same and first.device.type == "cuda" and self._kind_for(first) == KIND_TREE:
            pieces = _cuda_pieces_function()
            if pieces is not None:
                pending = tree_digest_cuda_pieces(tensors, pieces, self._arena_slot)
                if pending is not None:
                    return pending
        if like is not None:
            device = like[0].device if like else first.device
            tensors = [t.reshape(-1).to(device=device, dtype=torch.float32) for t in tensors]
        return self._digest(torch.cat([t.reshape(-1) for t in tensors]))

    def _gather(self, own: bytes, bucket_count: int, step: int) -> List[bytes]:
        if not _distributed(self.process_group):
            return [own]  # a world of one gathers its own record: no collective
        group = self._gather_group_for(self.process_group)
        device = torch.device("cpu")
        if dist.get_backend(group) == "nccl":
            device = torch.device("cuda", torch.cuda.current_device())
        world = dist.get_world_size(group)
        gathered_counts = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(world)]
        _collectives.launch_and_wait(
            dist.all_gather, gathered_counts,
            torch.tensor([bucket_count], dtype=torch.int64, device=device), group=group)
        counts = [int(c.item()) for c in gathered_counts]
        if len(set(counts)) != 1:
            raise WorldDisagreement(f"step {step}: the ranks reduced {counts} buckets "
                                    "(rank by rank): every rank must run the wrapped hook")
        mine = torch.frombuffer(bytearray(own), dtype=torch.int64).to(device)
        rows = [torch.empty_like(mine) for _ in range(world)]
        _collectives.launch_and_wait(dist.all_gather, rows, mine, group=group)
        rows = [row.cpu() for row in rows]
        return [ctypes.string_at(row.data_ptr(), len(own)) for row in rows]

    def _gather_group_for(self, group: Optional[dist.ProcessGroup]
                          ) -> Optional[dist.ProcessGroup]:
        """The group the digests are gathered over: beside an NCCL world, a Gloo group of the
        same ranks, made at the first gather (every rank gathers at the same step), so that
        gathering a few hundred bytes on the host never waits for the GPU's queue (an NCCL
        gather would, and stall the step behind it). A subgroup keeps its own backend: a new
        group needs every rank of the world."""
        if dist.get_backend(group) != "nccl" or group not in (None, dist.group.WORLD):
            return group
        if self._gather_group is None:
            try:
                self._gather_group = dist.new_group(backend="gloo")
            except (RuntimeError, ValueError):
                self._gather_group = False  # torch without Gloo: gather over NCCL
        return group if self._gather_group is False else self._gather_group

    def _header(self, world: int, parameters: int, start_step: int) -> Dict[str, Any]:
        return {"trail": FORMAT, "version": VERSION, "world": world,
                "hooks": self.hooks or ["(none wrapped)"], "digest": self._kind or KIND_FLAT,
                "start_step": start_step, "parameters": parameters}

    @property
    def head(self) -> str:
        """The chain after the last record appended (every rank keeps it)."""
        return self._chain.head

    @property
    def records(self) -> int:
        """The records appended to the trail, the header included."""
        return self._chain.records

    def _append(self, record: Dict[str, Any]) -> None:
        self._chain.append(record, write=self._is_writer())

    def _is_writer(self) -> bool:
        rank = dist.get_rank(self.process_group) if dist.is_available() and \
            dist.is_initialized() else 0
        return rank == self.writer

    def close(self) -> None:
        """Appends the end record (a trail without one reads as truncated or still being
        written) and closes the file. Every rank calls it (a collective on Gloo: see below)."""
        self._flush()
        if _distributed(self.process_group):
            # A wrapped hook of torch's (allreduce_hook) leaves its future's Python callback
            # to a Gloo worker, which takes the GIL again after the future completed; a
            # teardown holding the GIL (destroy_process_group, ~Reducer) would wait for that
            # worker for ever. Drained here, before the user's teardown (_collectives.drain).
            _collectives.drain(self.process_group)
        if self.records:
            self._append({"end": True, "steps": self.step, "records": self.records})
        self._chain.close()
        if self._hasher is not None:
            self._hasher.shutdown()
            self._hasher = None

    # --- checkpoints -------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        self._flush()  # the head must be this step's
        return {"format": FORMAT, "version": VERSION, "head": self.head, "step": self.step,
                "records": self.records, "digest": self._kind}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues the chain of a checkpoint: the writer cuts the file back to the record
        whose chain is the checkpoint's head (records past it belong to the lost run)."""
        if state.get("format") != FORMAT or state.get("version") != VERSION:
            raise InputError(f"not a {FORMAT} {VERSION} state: {state!r}")
        self.step = state["step"]
        self._kind = state.get("digest")
        self._side_of = {}  # decided again under the checkpoint's kind
        self._chain.cut_after(state["records"], state["head"], write=self._is_writer())


class TrailedReduceScatter:
    """Trail.wrap_reduce_scatter's comm: `comm`'s reduce-scatter, each call's input and shard
    digested (on a GPU, on the stream FSDP runs the call on) and recorded."""

    def __init__(self, trail: Trail, comm: Any, order: Tuple[int, ...]):
        self.trail, self.comm, self.order = trail, comm, order

    def allocate(self, size: Any, *, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return self.comm.allocate(size, dtype=dtype, device=device)

    def __call__(self, output_tensor: torch.Tensor, input_tensor: torch.Tensor,
                 group: dist.ProcessGroup, op: Any, async_op: bool = False) -> Any:
        input_digest = self.trail._digest(input_tensor)
        work = self.comm(output_tensor, input_tensor, group, op, async_op)
        if work is not None:
            work.wait()  # the shard is digested next
        self.trail._record_call(input_tensor.numel(), input_digest,
                                self.trail._digest(output_tensor), self.order)
        return None


def _layout_of(order: Tuple[int, ...], position: Dict[int, int]) -> bytes:
    """A bucket's "layout", 8 bytes: the first 8 of XXH3-128 over the positions, among the
    parameters end_step() was given (u32 little-endian; 0xffffffff for one not among them),
    of the bucket's parameters in the bucket's order. A resumed run's model lists its
    parameters as the first run's did, so equal layouts are the same parameters in the same
    order."""
    indices = b"".join(position.get(i, 0xFFFFFFFF).to_bytes(4, "little") for i in order)
    return digest_bytes(indices)[:8]


def _distributed(group: Optional[dist.ProcessGroup]) -> bool:
    """Whether the trail's ranks are several processes (collectives to run)."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size(group) > 1


def _optimizer_tensors(optimizer: torch.optim.Optimizer) -> List[torch.Tensor]:
    """The optimizer state's tensors, in the order of state_dict()."""
    state = optimizer.state_dict()["state"]
    return [value.detach() for key in sorted(state)
            for _, value in sorted(state[key].items()) if isinstance(value, torch.Tensor)]


class _StepDigests:
    """One step's digests, some perhaps PendingTrees whose leaves are still being hashed or
    copied to the host; deferred when any is, and then finished a step later. A deferred step's
    roots are hashed on the trail's worker thread (start), beside the next step's host work:
    the wait for the copy and XXH3 over the leaves (a few MB a step) release the GIL."""

    def __init__(self, step: int, buckets: List[Tuple[int, int, bytes]], digests: List[Digest],
                 parameters: int, optimizer: bool):
        self.step, self.buckets, self.digests = step, buckets, digests
        self.parameters, self.optimizer = parameters, optimizer
        self.deferred = any(isinstance(d, PendingTree) for d in digests)
        # The worker's Future of the finished digests.
        self._roots: Optional[concurrent.futures.Future[List[bytes]]] = None

    def start(self, worker: concurrent.futures.ThreadPoolExecutor) -> None:
        self._roots = worker.submit(self._finished)

    def _finished(self) -> List[bytes]:
        return [d.root() if isinstance(d, PendingTree) else d for d in self.digests]

    def finish(self) -> List[bytes]:
        """The 16-byte digests, waiting for the copies (or the worker) where not done yet."""
        finished = self._roots.result() if self._roots is not None else self._finished()
        self._roots = None
        self.digests = list(finished)
        return finished
