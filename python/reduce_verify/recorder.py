"""Recorder: dumps chosen steps' per-rank bucket gradients, so that a real training run's
reductions can be replayed on any other box through the command-line tool:

    reduce-verify digest --op mean --dtype f32 --inputs step000003/bucket000/rank*.f32
    reduce-verify run --transport gloo --op mean --dtype f32 --inputs step000003/bucket000/rank*.f32

each print, as the first token of their line, the digest the run got (the manifest's
`result_digest`), or another digest where that box's reduction differs.

Layout under the directory, written by one rank (the writer, rank 0 by default) from the
recorded step's all-gathered addends (an all-gather copies bytes, so slot r is exactly rank
r's bucket):

    manifest.jsonl                            one JSON object a line, one line per recorded
                                              (step, bucket), appended as each is captured
    step<S>/bucket<B>/rank<R>.<dtype>         raw little-endian values of the bucket's dtype
                                              (.f32 binary32, .bf16 bfloat16, .f16 binary16:
                                              the manifest's "dtype", the tool's --dtype),
                                              zero-padded numbers so that a shell glob lists
                                              the ranks in order

A step is what the hook's HookState counts: synchronised backward passes (the optimizer
steps of the usual loop; under no_sync() gradient accumulation, not the forward passes).
Every rank also keeps `local`: its own (step, bucket, input digest, result digest), which a
test compares with the writer's manifest."""

import atexit
import ctypes
import json
import os
import pathlib
import threading
import warnings
from typing import Any, Dict, Iterable, List, Union

import torch

from . import _library
from .errors import InputError
from .tensors import check_little_endian, digest, dtype_name, values_of

# 3: "dtype" is the tool's spelling (f32, bf16, f16), the files are named by it, and the
# replays pass it as --dtype.
FORMAT = "reduce-verify torch recording 3"
MANIFEST = "manifest.jsonl"


def read_manifest(directory: Union[str, os.PathLike]) -> List[Dict[str, Any]]:
    """The entries of a recording's manifest, in the order they were captured."""
    path = pathlib.Path(directory) / MANIFEST
    entries = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except ValueError as error:
            raise InputError(f"{path}:{number}: not a JSON line ({error})") from error
    return entries


def _write_atomically(path, data):
    temporary = path.with_name(path.name + ".partial")
    with open(temporary, "wb") as out:
        out.write(data)
    os.replace(temporary, path)


def _raw_bytes(tensor):
    """The tensor's elements as the bytes of its dtype (little-endian: check_little_endian)."""
    host = values_of(tensor.detach().to("cpu"))
    return ctypes.string_at(host.data_ptr(), host.numel() * host.element_size())


def _parse_steps(steps) -> frozenset:
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
    HookState counts them) into `directory`. Pass it as HookState(recorder=...).

    The manifest is appended to, never rewritten: a directory recorded into again (a resumed
    run) keeps the earlier entries. close(), the end of a `with Recorder(...)` block or the
    interpreter's exit warns about chosen steps the training never reached."""

    def __init__(self, directory: Union[str, os.PathLike], steps: Union[int, Iterable[int]],
                 writer_rank: int = 0):
        check_little_endian()
        self.directory = pathlib.Path(directory)
        self.steps = _parse_steps(steps)
        self.writer_rank = writer_rank
        self.local: List[Dict[str, Any]] = []  # this rank's own digests, on every rank
        self._recorded = set()  # steps captured on this rank
        self._steps_seen = 0    # synchronised backward passes the hook reported
        self._closed = False
        # The hooks' completion callbacks may run on a process group's threads, several
        # buckets at once: one capture at a time keeps the manifest's lines whole.
        self._lock = threading.Lock()
        atexit.register(self.close)

    def __repr__(self) -> str:
        shown = sorted(self.steps)
        steps = ", ".join(map(str, shown[:6])) + (", ..." if len(shown) > 6 else "")
        return (f"Recorder({str(self.directory)!r}, steps=[{steps}], "
                f"writer_rank={self.writer_rank}, recorded={sorted(self._recorded)}, "
                f"steps_seen={self._steps_seen})")

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc_info) -> None:
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
        """Warns (RuntimeWarning) about chosen steps the hook never reached. Idempotent."""
        if self._closed:
            return
        self._closed = True
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

    def _wants(self, step: int) -> bool:
        return step in self.steps and not self._closed

    def _saw_step(self, step: int) -> None:
        self._steps_seen = max(self._steps_seen, step + 1)

    def _capture(self, **record) -> None:
        with self._lock:
            self._capture_unlocked(**record)

    def _capture_unlocked(self, *, step, bucket, rank, world, op, contract, inputs,
                          own_input_digest, result):
        result_digest = digest(result)
        self._recorded.add(step)
        self.local.append({"step": step, "bucket": bucket, "rank": rank,
                           "input_digest": own_input_digest, "result_digest": result_digest})
        if rank != self.writer_rank:
            return
        folder = pathlib.Path(f"step{step:06d}") / f"bucket{bucket:03d}"
        (self.directory / folder).mkdir(parents=True, exist_ok=True)
        dtype = dtype_name(inputs.dtype)
        files, digests = [], []
        for r in range(world):
            relative = folder / f"rank{r:04d}.{dtype}"
            _write_atomically(self.directory / relative, _raw_bytes(inputs[r]))
            files.append(str(relative))
            digests.append(digest(inputs[r]))
        options = ("" if contract == "fixed-order" else " --contract exact") + f" --dtype {dtype}"
        inputs_glob = f"{folder}/rank*.{dtype}"
        entry = {
            "format": FORMAT,
            "step": step,
            "bucket": bucket,
            "world": world,
            "count": int(result.numel()),
            "dtype": dtype,
            "byte_order": "little",
            "contract": contract,
            "op": op,
            "device": str(result.device),
            "inputs": files,
            "input_digests": digests,
            "result_digest": result_digest,
            "library": _library.library_info(),
            "torch": torch.__version__,
            # The tool's path is the installed package's (reduce_verify.tool_path()), or
            # `reduce-verify` where it is on PATH.
            "replay": [
                f"reduce-verify digest --op {op}{options} --inputs {inputs_glob}",
                f"reduce-verify run --transport gloo --op {op}{options} "
                f"--inputs {inputs_glob}",
            ],
        }
        with open(self.manifest_path(), "a") as manifest:  # one write a line: appended whole
            manifest.write(json.dumps(entry) + "\n")
