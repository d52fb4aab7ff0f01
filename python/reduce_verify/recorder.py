"""Recorder: dumps chosen steps' per-rank bucket gradients, so that a real training run's
reductions can be replayed on any other box through the command-line tool:

    reduce-verify replay RECORDING_DIR

checks every rank file against the digest recorded for it and reduces every bucket again,
under the recorded contract, op and dtype, against the recorded result's digest (exit 1
naming the step, bucket and rank file that differ). One bucket alone replays as

    reduce-verify digest --op mean --dtype f32 --inputs step000003/bucket000/rank*.f32

whose first token is the recorded result's digest.

Layout under the directory, written by one rank (the writer, rank 0 by default) from the
recorded step's all-gathered addends (an all-gather copies bytes, so slot r is exactly rank
r's bucket):

    manifest.jsonl                            hash-chained JSON lines in the digest trail's
                                              format (docs/audit.md, docs/DESIGN.md §12): a
                                              header, one record per recorded (step, bucket)
                                              appended as each is captured, an end record
                                              when the Recorder closes
    step<S>/bucket<B>/rank<R>.<dtype>         raw little-endian values of the bucket's dtype
                                              (.f32 binary32, .bf16 bfloat16, .f16 binary16:
                                              the record's "dtype", the tool's --dtype),
                                              zero-padded numbers so that a shell glob lists
                                              the ranks in order

A step is what the hook's HookState counts: synchronised backward passes (the optimizer
steps of the usual loop; under no_sync() gradient accumulation, not the forward passes).
Every rank also keeps `local`: its own (step, bucket, input digest, result digest), which a
test compares with the writer's manifest.

FSDP2 (reduce_verify.fsdp.register(..., recorder=)): each reduce-scatter call of a chosen step
is a bucket, numbered in call order (FSDP calls its modules' reduce-scatters in one order on
every rank). Its rank files are every rank's whole input (its gradients laid out (W, s), the
padding included) and its result digest is that of every rank's shard concatenated in rank
order: the all-reduce's digest of the same inputs (DESIGN §2.6), so `replay` and
`digest --inputs` check it unchanged; each rank's own shard digest is in "shards". FSDP has no
end-of-step signal a comm sees: call recorder.end_step() once per optimizer step, as
Trail.end_step."""

import atexit
import ctypes
import json
import os
import pathlib
import threading
import warnings
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple, Union

import torch
import torch.distributed as dist

from . import _collectives, _library
from ._chain import Chain, ChainWriter
from .ddp.hooks import HOOKS, Hook
from .ddp.state import HookState, resolve_state
from .errors import InputError, ReduceVerifyError
from .fsdp import _OP_MEAN, _OP_SUM, parse_op
from .tensors import check_little_endian, digest, dtype_name, values_of
from .trail import KIND_FLAT

# 4: the manifest is the trail's chained JSON lines (header, one record per bucket with the
# trail's bucket fields and the rank files, end record). 3: plain JSON lines, one object a
# bucket, "dtype" the tool's spelling; still read by read_manifest, never appended to.
FORMAT = "reduce-verify torch recording"
VERSION = 4
FORMAT_3 = "reduce-verify torch recording 3"
MANIFEST = "manifest.jsonl"


def _first_line_is_format_3(path: pathlib.Path) -> bool:
    with open(path, "rb") as manifest:
        first = manifest.readline()
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, dict) and str(record.get("format", "")).startswith(FORMAT)


def _read_format_3(path: pathlib.Path) -> List[Dict[str, Any]]:
    entries = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except ValueError as error:
            raise InputError(f"{path}:{number}: not a JSON line ({error})") from error
    return entries


def _replay_lines(op: str, contract: str, dtype: str, folder: str) -> List[str]:
    options = ("" if contract == "fixed-order" else f" --contract {contract}") + \
        f" --dtype {dtype}"
    inputs_glob = f"{folder}/rank*.{dtype}"
    return [f"reduce-verify digest --op {op}{options} --inputs {inputs_glob}",
            f"reduce-verify run --transport gloo --op {op}{options} --inputs {inputs_glob}"]


def read_manifest(directory: Union[str, os.PathLike]) -> List[Dict[str, Any]]:
    """The recorded buckets of a recording, in the order they were captured, one dict each as
    format 3's lines were: step, bucket, world, count, dtype, byte_order, contract, op,
    device, "inputs" (the rank files, relative to the directory), "input_digests" (one per
    rank), "result_digest", "results" (one per rank), library, torch, "replay" (the
    per-bucket `reduce-verify digest|run --inputs` lines) and "record" (its record number in
    the manifest). The chain is checked: an edited, moved or dropped record raises
    InputError naming manifest.jsonl:record. Format 3 manifests are read as they are."""
    path = pathlib.Path(directory) / MANIFEST
    if _first_line_is_format_3(path):
        return _read_format_3(path)
    chained = Chain(path)
    if not chained.records:
        raise InputError(f"{path}: an empty manifest (no header record)")
    header = chained.records[0][1]
    if header.get("recording") != FORMAT or header.get("version") != VERSION:
        raise InputError(f"{path}:1: not a {FORMAT} {VERSION} header: {header!r}")
    entries = []
    for number, record in chained.records[1:]:
        if record.get("end"):
            continue
        try:
            entries += _entries_of(header, number, record)
        except (KeyError, IndexError, TypeError) as error:
            raise InputError(f"{path}:{number}: not a recorded bucket ({error!r})") from error
    return entries


def _entries_of(header: Dict[str, Any], number: int,
                record: Dict[str, Any]) -> List[Dict[str, Any]]:
    entries = []
    for bucket in record["buckets"]:
        files = bucket["files"]
        entries.append({
            "format": FORMAT, "version": VERSION, "record": number,
            "step": record["step"], "bucket": bucket["index"], "world": header["world"],
            "count": bucket["numel"], "dtype": record["dtype"],
            "byte_order": header.get("byte_order", "little"),
            "contract": record["contract"], "op": record["op"],
            "device": record.get("device"), "inputs": files,
            "input_digests": bucket["inputs"], "results": bucket["results"],
            "result_digest": bucket["results"][0],
            "library": header.get("library"), "torch": header.get("torch"),
            "replay": _replay_lines(record["op"], record["contract"], record["dtype"],
                                    str(pathlib.PurePosixPath(files[0]).parent)),
        })
    return entries


def write_rank_file(path: pathlib.Path, tensor: torch.Tensor) -> None:
    """Writes the tensor's values as the raw little-endian bytes of its dtype (a rank file:
    what `reduce-verify digest --dtype … --inputs` reads and `xxh128sum` hashes), row-major,
    whole or not at all: into `path`.partial, then renamed. The Recorder's bucket files and
    the ExactGradAccumulator's micro-batch files."""
    check_little_endian()
    host = values_of(tensor.detach().to("cpu"))
    data = ctypes.string_at(host.data_ptr(), host.numel() * host.element_size())
    temporary = path.with_name(path.name + ".partial")
    with open(temporary, "wb") as out:
        out.write(data)
    os.replace(temporary, path)


def _parse_steps(steps: Union[int, Iterable[int]]) -> FrozenSet[int]:
    if isinstance(steps, bool) or not isinstance(steps, (int, Iterable)):
        raise InputError(f"steps is a {type(steps).__name__}; pass a step number or an "
                         "iterable of them (steps=5, steps=[0, 100], steps=range(0, 1000, 100))")
    chosen = [steps] if isinstance(steps, int) else list(steps)
    for step in chosen:
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise InputError(f"step {step!r} is not a step number (an int ≥ 0)")
    return frozenset(chosen)


class Recorder:
    """Records the buckets of the steps in `steps` (an int or an iterable of ints; a step is
    the number of synchronised backward passes, i.e. optimizer steps, before it, as the hook's
    HookState counts them) into `directory`. It wraps a hook, as the Trail does:

        model.register_comm_hook(HookState(op="mean"), recorder.wrap(fixed_order_hook))

    or is passed as HookState(recorder=recorder) with the plain hook, which does the same.

    The manifest is appended to: a directory recorded into again (a resumed run, another
    Recorder) keeps the earlier records, and the new ones continue their chain (the end
    record a closed Recorder wrote is taken off first). close(), the end of a
    `with Recorder(...)` block or the interpreter's exit writes the end record and warns
    about chosen steps the training never reached."""

    def __init__(self, directory: Union[str, os.PathLike], steps: Union[int, Iterable[int]],
                 writer_rank: int = 0):
        check_little_endian()
        self.directory = pathlib.Path(directory)
        self.steps = _parse_steps(steps)
        self.writer_rank = writer_rank
        self.local: List[Dict[str, Any]] = []  # this rank's own digests, on every rank
        self._recorded: Set[int] = set()  # steps captured on this rank
        self._steps_seen = 0    # synchronised backward passes the hook reported
        self._fsdp_step = 0     # end_step() calls: FSDP's step count
        self._fsdp_calls = 0    # reduce-scatter calls in this FSDP step (the bucket index)
        self._closed = False
        # The hooks' completion callbacks may run on a process group's threads, several
        # buckets at once: one capture at a time keeps the manifest's lines whole.
        self._lock = threading.Lock()
        # The writer's place in the manifest's chain: None until its first capture opens it.
        self._chain: Optional[ChainWriter] = None
        self._wrote = False  # this Recorder appended a record (close() then ends the file)
        manifest = self.manifest_path()
        if manifest.is_file() and _first_line_is_format_3(manifest):
            raise InputError(f"{manifest} holds a {FORMAT_3} recording (not chained): record "
                             "into a new directory")
        atexit.register(self.close)

    def __repr__(self) -> str:
        shown = sorted(self.steps)
        steps = ", ".join(map(str, shown[:6])) + (", ..." if len(shown) > 6 else "")
        return (f"Recorder({str(self.directory)!r}, steps=[{steps}], "
                f"writer_rank={self.writer_rank}, recorded={sorted(self._recorded)}, "
                f"steps_seen={self._steps_seen})")

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def manifest_path(self) -> pathlib.Path:
        return self.directory / MANIFEST

    def entries(self) -> List[Dict[str, Any]]:
        """The manifest's entries so far (on the writer rank)."""
        return read_manifest(self.directory)

    @property
    def recorded_steps(self) -> List[int]:
        return sorted(self._recorded)

    def close(self) -> None:
        """Ends the manifest with its end record (on the writer, when this Recorder wrote) and
        warns (RuntimeWarning) about chosen steps the hook never reached. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._chain is not None:
                if self._wrote:
                    self._chain.append({"end": True, "records": self._chain.records})
                self._chain.close()
        atexit.unregister(self.close)
        never = sorted(s for s in self.steps if s not in self._recorded)
        if never:
            warnings.warn(
                f"reduce_verify.Recorder({str(self.directory)!r}): step(s) "
                f"{', '.join(map(str, never))} never recorded: the hook saw "
                f"{self._steps_seen} synchronised backward pass(es)"
                + (f" (steps 0 to {self._steps_seen - 1})" if self._steps_seen else "")
                + ". A step counts synchronised backward passes, i.e. "
                "optimizer steps; under gradient accumulation (no_sync()) it is not the "
                "number of forward passes", RuntimeWarning, stacklevel=2)

    def wrap(self, hook: Hook) -> Hook:
        """A DDP communication hook that runs `hook` (reduce_verify.ddp.fixed_order_hook or
        exact_hook) and records the buckets of the chosen steps: before the hook, a copy of
        this rank's bucket; after it, every rank's copy gathered (an all-gather copies bytes,
        so row r is exactly rank r's bucket) and, on the writer, written with the result's
        digest. The hook's agreement then runs on a recorded bucket whatever its policy, and
        compares whether every rank records it (HookState.recording)."""
        contract = HOOKS.get(getattr(hook, "__wrapped__", hook))
        if contract is None or getattr(hook, "recorder", None) is not None:
            raise InputError(f"Recorder.wrap: {getattr(hook, '__name__', hook)!r} is neither "
                             "reduce_verify.ddp.fixed_order_hook nor exact_hook (the recording "
                             "is replayed under the hook's contract)")

        # Real annotations, not strings: DDP's register_comm_hook compares them with
        # dist.GradBucket and torch.futures.Future[torch.Tensor].
        def recorded_hook(state: Optional[HookState],
                          bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
            state = resolve_state(state)
            step = state.step
            if bucket.is_last():
                self._saw_step(step)
            recording = self._wants(step)
            own = bucket.buffer().clone() if recording else None  # before the hook writes it
            state.recording = recording
            try:
                future = hook(state, bucket)
            finally:
                state.recording = None
            if own is None:
                return future
            try:
                result = self._record_bucket(state, bucket, step, contract, own, future)
            except ReduceVerifyError as error:
                state.error = error  # what state.original_errors() raises
                raise
            done: torch.futures.Future[torch.Tensor] = torch.futures.Future()
            done.set_result(result)
            return done

        recorded_hook.__wrapped__ = hook  # type: ignore[attr-defined]
        recorded_hook.recorder = self  # type: ignore[attr-defined]
        recorded_hook.__name__ = recorded_hook.__qualname__ = \
            f"Recorder.wrap({getattr(hook, '__name__', hook)})"
        return recorded_hook

    def wrap_reduce_scatter(self, comm: Any) -> "RecordedReduceScatter":
        """An FSDP2 reduce-scatter (torch's ReduceScatter protocol) that runs `comm` (a
        reduce_verify.fsdp.ReduceScatter) and records its calls in the chosen steps (counted by
        end_step()). reduce_verify.fsdp.register(..., recorder=) wraps its comms so."""
        if not all(hasattr(comm, a) for a in ("contract", "sum_means", "name", "_reduction")):
            raise InputError(f"Recorder.wrap_reduce_scatter: {comm!r} is not a "
                             "reduce_verify.fsdp.ReduceScatter (the recording is replayed under "
                             "its contract)")
        return RecordedReduceScatter(self, comm)

    def end_step(self) -> None:
        """Ends an FSDP step (call it once per optimizer step on every rank): the next
        reduce-scatter call is the next step's bucket 0."""
        with self._lock:
            self._fsdp_step += 1
            self._fsdp_calls = 0
            self._saw_step(self._fsdp_step - 1)

    def _next_fsdp_call(self) -> Tuple[int, int]:
        """(step, bucket) of an FSDP reduce-scatter call."""
        with self._lock:
            call = self._fsdp_calls
            self._fsdp_calls += 1
            return self._fsdp_step, call

    def _record_bucket(self, state: HookState, bucket: dist.GradBucket, step: int,
                       contract: str, own: torch.Tensor,
                       future: torch.futures.Future[torch.Tensor]) -> torch.Tensor:
        """Gathers every rank's copy of the bucket and captures it with the hook's result."""
        group = state.group()
        future = _collectives.settled(future, group)
        future.wait()  # on NCCL a stream dependency; raises the hook's error here
        value = future.value()
        result = value[0] if isinstance(value, (list, tuple)) else value
        world, rank = dist.get_world_size(group), dist.get_rank(group)
        inputs = torch.empty((world, own.numel()), dtype=own.dtype, device=own.device)
        _collectives.all_gather_rows(inputs, own, group).wait()
        self._capture(step=step, bucket=bucket.index(), rank=rank, world=world, op=state.op,
                      contract=contract, inputs=inputs, own_input_digest=digest(own),
                      result=result)
        return result

    def _wants(self, step: int) -> bool:
        return step in self.steps and not self._closed

    def _saw_step(self, step: int) -> None:
        self._steps_seen = max(self._steps_seen, step + 1)

    def _capture(self, **record: Any) -> None:
        with self._lock:
            self._capture_unlocked(**record)

    def _capture_unlocked(self, *, step: int, bucket: int, rank: int, world: int, op: str,
                          contract: str, inputs: torch.Tensor, own_input_digest: str,
                          result: torch.Tensor, shards: Optional[List[str]] = None) -> None:
        """shards: a reduce-scatter's, every rank's shard digest (result: the shards
        concatenated in rank order)."""
        result_digest = digest(result)
        self._recorded.add(step)
        own = {"step": step, "bucket": bucket, "rank": rank,
               "input_digest": own_input_digest, "result_digest": result_digest}
        if shards is not None:
            own["shard_digest"] = shards[rank]
        self.local.append(own)
        if rank != self.writer_rank:
            return
        if self._chain is None:
            self._open(world)
        folder = pathlib.Path(f"step{step:06d}") / f"bucket{bucket:03d}"
        (self.directory / folder).mkdir(parents=True, exist_ok=True)
        dtype = dtype_name(inputs.dtype)
        files, digests = [], []
        for r in range(world):
            relative = folder / f"rank{r:04d}.{dtype}"
            write_rank_file(self.directory / relative, inputs[r])
            files.append(relative.as_posix())
            digests.append(digest(inputs[r]))
        # The all-gather that ends the hook copies the reduced shards' bytes to every rank, so
        # every rank's result is the writer's; each rank's own digest is in its `local`.
        recorded = {"index": bucket, "numel": int(result.numel()), "inputs": digests,
                    "results": [result_digest] * world, "files": files}
        if shards is not None:
            recorded.update({"coll": "reduce-scatter", "shards": shards})
        self._append({
            "step": step, "contract": contract, "op": op, "dtype": dtype,
            "device": str(result.device), "buckets": [recorded],
        })
        self._wrote = True

    def _open(self, world: int) -> None:
        """The writer's first capture: continues the chain of the manifest already there (its
        end record and a torn last line taken off), or starts one with the header."""
        path = self.manifest_path()
        self.directory.mkdir(parents=True, exist_ok=True)
        if not path.is_file():
            self._chain = ChainWriter(path)
            self._append({"recording": FORMAT, "version": VERSION, "world": world,
                          "digest": KIND_FLAT, "byte_order": "little",
                          "library": _library.library_info(), "torch": torch.__version__})
            return
        if _first_line_is_format_3(path):
            raise InputError(f"{path} holds a {FORMAT_3} recording (not chained): record into "
                             "a new directory")
        chained = Chain(path)
        if not chained.records:
            raise InputError(f"{path}: a manifest without a header record")
        header = chained.records[0][1]
        if header.get("recording") != FORMAT or header.get("version") != VERSION:
            raise InputError(f"{path}:1: not a {FORMAT} {VERSION} header")
        if header.get("world") != world:
            raise InputError(f"{path}: recorded at world {header.get('world')}, this run's is "
                             f"{world}: record into another directory")
        kept = len(chained.records)
        if chained.records[-1][1].get("end"):
            kept -= 1
        chain = ChainWriter(path)
        chain.continue_file(kept, chained)
        self._chain = chain  # set only now: a manifest refused above is refused again

    def _append(self, record: Dict[str, Any]) -> None:
        assert self._chain is not None  # opened by the writer's first capture
        self._chain.append(record)


class RecordedReduceScatter:
    """Recorder.wrap_reduce_scatter's comm: `comm`'s reduce-scatter; in a chosen step, before
    it, a copy of this rank's input, and after it every rank's input and shard all-gathered
    (copies of bytes) and captured on the writer."""

    def __init__(self, recorder: Recorder, comm: Any):
        self.recorder, self.comm = recorder, comm

    def allocate(self, size: Any, *, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return self.comm.allocate(size, dtype=dtype, device=device)

    def __call__(self, output_tensor: torch.Tensor, input_tensor: torch.Tensor,
                 group: Optional[dist.ProcessGroup], op: Any, async_op: bool = False) -> Any:
        recorder = self.recorder
        step, call = recorder._next_fsdp_call()
        recording = recorder._wants(step)
        own = input_tensor.detach().reshape(-1).clone() if recording else None
        work = self.comm(output_tensor, input_tensor, group, op, async_op)
        if own is None:
            return work
        if work is not None:
            work.wait()
        # What the comm reduced is agreed by now: the checks below hold on every rank or none.
        world, rank = dist.get_world_size(group), dist.get_rank(group)
        where = f"Recorder({str(recorder.directory)!r}): {self.comm.name}, step {step} call {call}"
        if self.comm._reduction._phase is not None:
            raise InputError(f"{where} accumulates micro-batches (micro_batch()): its shard is "
                             "the step's accumulated mean, not this call's reduction; record "
                             "steps without accumulation")
        code, divisor, op_name = parse_op(op, world, self.comm.sum_means)
        if code == _OP_SUM:
            recorded_op = "sum"
        elif code == _OP_MEAN and divisor == world:
            recorded_op = "mean"
        else:
            raise InputError(f"{where}: {op_name} is not a sum or a mean over W = {world}, "
                             "which is all a replay reduces")
        inputs = torch.empty((world, own.numel()), dtype=own.dtype, device=own.device)
        _collectives.all_gather_rows(inputs, own, group).wait()
        shard = output_tensor.detach().reshape(-1)
        shards = torch.empty((world, shard.numel()), dtype=shard.dtype, device=shard.device)
        _collectives.all_gather_rows(shards, shard, group).wait()
        recorder._capture(step=step, bucket=call, rank=rank, world=world, op=recorded_op,
                          contract=self.comm.contract, inputs=inputs,
                          own_input_digest=digest(own), result=shards.reshape(-1),
                          shards=[digest(row) for row in shards])
        return None
