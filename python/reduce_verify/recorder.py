"""Recorder: dumps chosen steps' per-rank bucket gradients, so that a real training run's
reductions can be replayed on any other box through the gate:

    reduce-verify digest --op mean --inputs step000003/bucket000/rank*.f32
    reduce-verify run --transport gloo --op mean --inputs step000003/bucket000/rank*.f32

each print, as the first token of their line, the digest the run got (the manifest's
`result_digest`), or another digest where that box's reduction differs.

Layout under the directory, written by one rank (the writer, rank 0 by default) from the
recorded step's all-gathered addends (an all-gather copies bytes, so slot r is exactly rank
r's bucket):

    manifest.json                             one entry per recorded (step, bucket)
    step<S>/bucket<B>/rank<R>.f32             raw little-endian binary32, zero-padded numbers
                                              so that a shell glob lists the ranks in order

Every rank also keeps `local`: its own (step, bucket, input digest, result digest), which a
test compares with the writer's manifest."""

import ctypes
import json
import os
import pathlib
import threading

import torch

from . import _library
from .tensors import check_little_endian, digest

FORMAT = "reduce-verify torch recording 1"


def _write_atomically(path, data):
    temporary = path.with_name(path.name + ".partial")
    with open(temporary, "wb") as out:
        out.write(data)
    os.replace(temporary, path)


def _raw_bytes(tensor):
    host = tensor.detach().to("cpu").contiguous()
    return ctypes.string_at(host.data_ptr(), host.numel() * 4)


class Recorder:
    """Records the buckets of the steps in `steps` (step = completed backward passes before
    it, counted by the hook's HookState) into `directory`. Pass it as HookState(recorder=…)."""

    def __init__(self, directory, steps, writer_rank=0):
        check_little_endian()
        self.directory = pathlib.Path(directory)
        self.steps = frozenset(int(s) for s in steps)
        self.writer_rank = writer_rank
        self.entries = []  # the manifest's entries (the writer's)
        # The hooks' completion callbacks run on the process group's threads, several buckets
        # at once (Gloo keeps two): one capture at a time keeps the manifest whole.
        self._lock = threading.Lock()
        self.local = []    # this rank's own digests, on every rank

    def wants(self, step):
        return step in self.steps

    def manifest_path(self):
        return self.directory / "manifest.json"

    def capture(self, **record):
        with self._lock:
            self._capture(**record)

    def _capture(self, *, step, bucket, rank, world, op, contract, inputs, own_input_digest,
                 result):
        result_digest = digest(result)
        self.local.append({"step": step, "bucket": bucket, "rank": rank,
                           "input_digest": own_input_digest, "result_digest": result_digest})
        if rank != self.writer_rank:
            return
        folder = pathlib.Path(f"step{step:06d}") / f"bucket{bucket:03d}"
        (self.directory / folder).mkdir(parents=True, exist_ok=True)
        files, digests = [], []
        for r in range(world):
            relative = folder / f"rank{r:04d}.f32"
            _write_atomically(self.directory / relative, _raw_bytes(inputs[r]))
            files.append(str(relative))
            digests.append(digest(inputs[r]))
        contract_option = "" if contract == "fixed-order" else " --contract exact"
        inputs_glob = f"{folder}/rank*.f32"
        self.entries.append({
            "step": step,
            "bucket": bucket,
            "world": world,
            "count": int(result.numel()),
            "dtype": "float32",
            "byte_order": "little",
            "contract": contract,
            "op": op,
            "device": str(result.device),
            "inputs": files,
            "input_digests": digests,
            "result_digest": result_digest,
            "replay": [
                f"reduce-verify digest --op {op}{contract_option} --inputs {inputs_glob}",
                f"reduce-verify run --transport gloo --op {op}{contract_option} "
                f"--inputs {inputs_glob}",
            ],
        })
        manifest = {
            "format": FORMAT,
            "library": _library.library_info(),
            "torch": torch.__version__,
            "entries": self.entries,
        }
        _write_atomically(self.manifest_path(),
                          (json.dumps(manifest, indent=2) + "\n").encode())
