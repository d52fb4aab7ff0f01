"""A world of two Gloo processes that calls the hooks on hand-made buckets (anything with
buffer(), index(), is_last() and gradients(), as DDP's GradBucket has) and on a float64 DDP
model, and writes what each case returned or raised to results-rank<R>.json."""

import json
import os
import pathlib

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import reduce_verify
from reduce_verify.ddp import HookState, exact_hook, fixed_order_hook


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


def cases(rank, world):
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
    results["float16-bucket"] = outcome(lambda: reduced_digest(
        fixed_order_hook, HookState(), HandMadeBucket(torch.zeros(8, dtype=torch.float16))))
    results["mixed-devices"] = outcome(lambda: reduced_digest(
        fixed_order_hook, HookState(),
        HandMadeBucket(torch.zeros(8), gradients=[torch.zeros(4), torch.zeros(4, device="meta")])))
    results["bad-state"] = outcome(lambda: reduced_digest(
        fixed_order_hook, {"op": "mean"}, HandMadeBucket(torch.zeros(8))))

    def float64_ddp():
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2).double())
        model.register_comm_hook(HookState(), fixed_order_hook)
        model(torch.ones(3, 4, dtype=torch.float64)).sum().backward()
        return "no error"
    results["float64-ddp"] = outcome(float64_ddp)
    # The world still works after every refusal above.
    results["after"] = outcome(lambda: reduced_digest(
        fixed_order_hook, HookState(), HandMadeBucket(torch.ones(8))))
    return results


def _main(rank, world, store, directory):
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    results = cases(rank, world)
    dist.barrier()
    dist.destroy_process_group()
    (pathlib.Path(directory) / f"results-rank{rank}.json").write_text(json.dumps(results))


def run(directory, world=2):
    mp.set_forkserver_preload(["torch", "torch.distributed", "reduce_verify", "hook_world"])
    directory = pathlib.Path(directory)
    mp.start_processes(_main, args=(world, str(directory / "store"), str(directory)),
                       nprocs=world, join=True, start_method="forkserver")
    return [json.loads((directory / f"results-rank{r}.json").read_text()) for r in range(world)]
