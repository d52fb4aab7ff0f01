"""A world of two Gloo processes that calls the hooks on hand-made buckets (anything with
buffer(), index(), is_last() and gradients(), as DDP's GradBucket has) and on a float64 DDP
model, and writes what each case returned or raised to results-rank<R>.json."""

import datetime
import json
import os
import pathlib
import time
import warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import reduce_verify
from reduce_verify.ddp import HookState, exact_hook, fixed_order_hook, register


class HandMadeBucket:
    def __init__(self, buffer, index=0, last=True, gradients=None):
        self._buffer = buffer
        self._index = index
        self._last = last
        self._gradients = gradients if gradients is not None else [buffer]

    def buffer(self):
        return self._buffer

    def index(self):
        return self._index

    def is_last(self):
        return self._last

    def gradients(self):
        return self._gradients


def addends(rank, n):
    generator = torch.Generator().manual_seed(17 + rank)
    return torch.randn(n, generator=generator) * 1e3


def outcome(call):
    try:
        value = call()
        return {"ok": True, "value": value}
    except Exception as error:  # the test reads the type and message
        return {"ok": False, "type": type(error).__name__, "message": str(error)}


def reduced_digest(hook, state, bucket):
    return reduce_verify.digest(hook(state, bucket).wait())


def cases(rank, world, directory):
    n = 1001  # not a multiple of W or of 4: the padded path
    results = {}
    for name, hook, contract in (("fixed", fixed_order_hook, "fixed-order"),
                                 ("exact", exact_hook, "exact")):
        # The hook's result against the same W addends reduced in one process.
        everyone = torch.stack([addends(r, n) for r in range(world)])
        expected = reduce_verify.digest(reduce_verify.reduce(everyone, "mean", contract))
        results[f"{name}-padded"] = outcome(
            lambda: [reduced_digest(hook, HookState(), HandMadeBucket(addends(rank, n))),
                     expected])
    results["length-disagrees"] = outcome(lambda: reduced_digest(
        fixed_order_hook, HookState(), HandMadeBucket(torch.zeros(100 + rank))))
    results["op-disagrees"] = outcome(lambda: reduced_digest(
        fixed_order_hook, HookState(op="sum" if rank else "mean"), HandMadeBucket(torch.zeros(8))))
    results["contract-disagrees"] = outcome(lambda: reduced_digest(
        fixed_order_hook if rank else exact_hook, HookState(), HandMadeBucket(torch.zeros(8))))
    # A bucket of bfloat16 on one rank and float32 on the other: the same length, other bytes.
    results["dtype-disagrees"] = outcome(lambda: reduced_digest(
        fixed_order_hook, HookState(),
        HandMadeBucket(torch.zeros(8, dtype=torch.bfloat16 if rank else torch.float32))))
    for dtype in (torch.bfloat16, torch.float16):
        for name, hook, contract in (("fixed", fixed_order_hook, "fixed-order"),
                                     ("exact", exact_hook, "exact")):
            # Padded half buckets against the same addends reduced in one process.
            everyone = torch.stack([addends(r, n).to(dtype) for r in range(world)])
            expected = reduce_verify.digest(reduce_verify.reduce(everyone, "mean", contract))
            results[f"{name}-padded-{dtype}"] = outcome(
                lambda: [reduced_digest(hook, HookState(),
                                        HandMadeBucket(addends(rank, n).to(dtype))), expected])
    results["float64-bucket"] = outcome(lambda: reduced_digest(
        fixed_order_hook, HookState(), HandMadeBucket(torch.zeros(8, dtype=torch.float64))))
    results["mixed-devices"] = outcome(lambda: reduced_digest(
        fixed_order_hook, HookState(),
        HandMadeBucket(torch.zeros(8), gradients=[torch.zeros(4), torch.zeros(4, device="meta")])))
    results["bad-state"] = outcome(lambda: reduced_digest(
        fixed_order_hook, {"op": "mean"}, HandMadeBucket(torch.zeros(8))))

    def float64_ddp(catching):
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2).double())
        state = HookState()
        model.register_comm_hook(state, fixed_order_hook)
        if catching:
            with state.original_errors():
                model(torch.ones(3, 4, dtype=torch.float64)).sum().backward()
        model(torch.ones(3, 4, dtype=torch.float64)).sum().backward()
        return "no error"
    results["float64-ddp"] = outcome(lambda: float64_ddp(False))
    results["float64-ddp-original-errors"] = outcome(lambda: float64_ddp(True))

    def register_float64():  # refused before any backward pass, as the class it is
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2).double())
        register(model, exact_hook)
        return "no error"
    results["register-float64"] = outcome(register_float64)
    results["register-bad-state"] = outcome(lambda: register(
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2)), fixed_order_hook,
        {"op": "mean"}))
    results["recorder"] = outcome(lambda: recorder_case(rank, world, directory))
    # The world still works after every refusal above.
    results["after"] = outcome(lambda: reduced_digest(
        fixed_order_hook, HookState(), HandMadeBucket(torch.ones(8))))
    return results


def recorder_case(rank, world, directory):
    """Gradient accumulation (two forward and backward passes per optimizer step, the first
    under no_sync()) for 20 optimizer steps with steps=[19, 20, 39]; then a second Recorder,
    steps given as an int, into the same folder."""
    folder = pathlib.Path(directory) / "recording"
    seen = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.manual_seed(0)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(6, 3))
        with reduce_verify.Recorder(folder, steps=[19, 20, 39]) as recorder:
            register(model, fixed_order_hook, HookState(recorder=recorder))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            for step in range(20):
                with model.no_sync():
                    model(torch.ones(2, 6) * rank).sum().backward()
                model(torch.ones(2, 6)).sum().backward()
                optimizer.step()
                optimizer.zero_grad()
            seen["recorded"] = recorder.recorded_steps
            seen["repr"] = repr(recorder)
        again = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(6, 3))
        with reduce_verify.Recorder(folder, steps=0) as second:
            again.register_comm_hook(HookState(recorder=second), exact_hook)
            again(torch.ones(2, 6)).sum().backward()
    seen["warnings"] = [str(w.message) for w in caught]
    seen["manifest"] = [(e["step"], e["contract"]) for e in reduce_verify.read_manifest(folder)] \
        if rank == 0 else []
    return seen


def default_hook_main(rank, world, store, directory):
    """Rank 0 runs fixed_order_hook with a 2 s agreement deadline, the others DDP's default
    all-reduce: rank 0 must name the deadline after about 2 s, not the process group's."""
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    state = HookState(agreement_timeout=2)
    if rank == 0:
        model.register_comm_hook(state, fixed_order_hook)
    started = time.monotonic()

    def step():
        with state.original_errors():
            model(torch.ones(3, 4)).sum().backward()
        return "no error"
    result = outcome(step)
    result["seconds"] = time.monotonic() - started
    (pathlib.Path(directory) / f"default-hook-rank{rank}.json").write_text(json.dumps(result))
    # The process group is unusable now: leave without tearing it down (the other ranks'
    # collectives fail once this rank's connections close).
    os._exit(0)


def _main(rank, world, store, directory):
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    if store.endswith("default-hook-store"):
        default_hook_main(rank, world, store, directory)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    results = cases(rank, world, directory)
    dist.barrier()
    dist.destroy_process_group()
    (pathlib.Path(directory) / f"results-rank{rank}.json").write_text(json.dumps(results))


def run(directory, world=2):
    mp.set_forkserver_preload(["torch", "torch.distributed", "reduce_verify", "hook_world"])
    directory = pathlib.Path(directory)
    mp.start_processes(_main, args=(world, str(directory / "store"), str(directory)),
                       nprocs=world, join=True, start_method="forkserver")
    return [json.loads((directory / f"results-rank{r}.json").read_text()) for r in range(world)]


def run_default_hook_world(directory, world=2):
    """The world of default_hook_main; returns each rank's outcome."""
    directory = pathlib.Path(directory)
    mp.start_processes(_main, args=(world, str(directory / "default-hook-store"),
                                    str(directory)),
                       nprocs=world, join=True, start_method="forkserver")
    return [json.loads((directory / f"default-hook-rank{r}.json").read_text())
            for r in range(world)]
