"""Training worlds for the exact gradient accumulation test (test_accumulate.py): a small
transformer block (1.3 M parameters, LayerNorm, cross-entropy) trained 10 optimizer steps with
a global batch of 8 micro-batches, spread over W Gloo processes × K accumulation steps.

Each micro-batch is a pure function of (step, index): its tokens are seeded by them, its size
is fixed, and every kernel is deterministic (torch.use_deterministic_algorithms(True), one
intra-op thread), so a micro-batch's gradient does not depend on which rank computes it: the
prerequisite of docs/DESIGN.md §11. What the split can change is only how the 8 gradients are
summed, which ExactGradAccumulator makes irrelevant and DDP with float accumulation does not.

Modes:
  exact        ExactGradAccumulator: add() after each backward, reduce(mean_over=8);
  ddp-float    DDP's default all-reduce, micro-batches accumulated in p.grad under no_sync()
               (the loss scaled by W / 8, so that DDP's mean over W is the mean over 8);
  mutant-float the mutant of the test: p.grad accumulated in float, one add() of the sum;
  mutant-drop  the mutant of the test: rank 0 drops its last micro-batch (mean still over 8)."""

import json
import os
import pathlib
import random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import reduce_verify
# The model and data; test_accumulate*.py read VOCAB, make_model and micro_batch through here.
from transformer_block import VOCAB, loss_of, make_model, micro_batch  # noqa: F401

STEPS = 10
MICRO_BATCHES = 8
LEARNING_RATE = 0.05


def assignment(step, world, shuffled):
    """The micro-batches each rank holds at `step`: contiguous K each, or, shuffled, a seeded
    permutation dealt round-robin (uneven when W does not divide 8)."""
    order = list(range(MICRO_BATCHES))
    if shuffled:
        random.Random(77 + step).shuffle(order)
    if not shuffled:
        per = MICRO_BATCHES // world
        return [order[r * per:(r + 1) * per] for r in range(world)]
    return [order[r::world] for r in range(world)]


def flat_parameters(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def train(mode, rank, world, shuffled, first_step, last_step, checkpoint_in, checkpoint_out,
          use_ddp, record=None, device="cpu"):
    """The final parameters' digest, and with record = (step, folder) that step's micro-batch
    gradients written to folder and the digest of its reduced gradient."""
    model = make_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=0.9)
    if checkpoint_in is not None:
        state = torch.load(checkpoint_in, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    ddp = None
    if mode == "ddp-float" or use_ddp:
        ddp = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=None if device == "cpu" else [device])
    forward = ddp if ddp is not None else model
    accumulator = None
    if mode != "ddp-float":
        accumulator = reduce_verify.ExactGradAccumulator(ddp if ddp is not None else model,
                                                         dist.group.WORLD)
    recorded = None
    for step in range(first_step, last_step):
        mine = assignment(step, world, shuffled)[rank]
        if accumulator is not None and record is not None:
            accumulator.record_dir = record[1] if step == record[0] else None
        optimizer.zero_grad(set_to_none=True)
        for k, index in enumerate(mine):
            last = k == len(mine) - 1
            if mode == "ddp-float":
                scale = world / MICRO_BATCHES
                if last:
                    (loss_of(forward, step, index, device) * scale).backward()
                else:
                    with ddp.no_sync():
                        (loss_of(forward, step, index, device) * scale).backward()
                continue
            if ddp is not None:
                with ddp.no_sync():
                    loss_of(forward, step, index, device).backward()
            else:
                loss_of(forward, step, index, device).backward()
            if mode == "exact":
                accumulator.add()
            elif mode == "mutant-drop":
                if rank == 0 and last:
                    optimizer.zero_grad(set_to_none=True)
                else:
                    accumulator.add()
            elif mode == "mutant-float" and last:
                accumulator.add()  # the float sum of this rank's micro-batches, added once
        if mode == "ddp-float" and not mine:
            raise AssertionError("DDP needs a backward on every rank")
        if accumulator is not None:
            accumulator.reduce(mean_over=MICRO_BATCHES)
            if record is not None and step == record[0]:
                recorded = reduce_verify.digest(
                    torch.cat([p.grad.reshape(-1) for p in model.parameters()]))
        optimizer.step()
    if checkpoint_out is not None and rank == 0:
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                   checkpoint_out)
    final = reduce_verify.digest(flat_parameters(model))
    return final if record is None else [final, recorded]


def _world_main(rank, world, store, directory, runs, backend="gloo"):
    torch.set_num_threads(1)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS
    torch.use_deterministic_algorithms(True)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    device = "cpu"
    if backend == "nccl":  # one GPU per rank
        torch.cuda.set_device(rank)
        device = f"cuda:{rank}"
    dist.init_process_group(backend, init_method=f"file://{store}", rank=rank, world_size=world)
    results = {}
    for run in runs:
        results[run["name"]] = train(run["mode"], rank, world, run.get("shuffled", False),
                                     run.get("first_step", 0), run.get("last_step", STEPS),
                                     run.get("checkpoint_in"), run.get("checkpoint_out"),
                                     run.get("use_ddp", False), run.get("record"), device)
        dist.barrier()  # a checkpoint written by rank 0 is complete before anyone reads it
    dist.destroy_process_group()
    (pathlib.Path(directory) / f"results-rank{rank}.json").write_text(json.dumps(results))


def run_world(world, runs, directory, backend="gloo"):
    """Runs `runs` one after another in a world of `world` processes (backend "nccl": one GPU
    each, rank r on GPU r); returns the per-rank {run name: final parameter digest}."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    mp.start_processes(_world_main,
                       args=(world, str(directory / "store"), str(directory), runs, backend),
                       nprocs=world, join=True, start_method="forkserver")
    return [json.loads((directory / f"results-rank{r}.json").read_text()) for r in range(world)]


def prepare_forkserver():
    mp.set_forkserver_preload(["torch", "torch.distributed", "reduce_verify",
                               "accumulation_training"])


def _outcome(call):
    try:
        return {"ok": True, "value": call()}
    except Exception as error:  # the test reads the type and message
        return {"ok": False, "type": type(error).__name__, "message": str(error)}


def _errors_main(rank, world, store, directory):
    """Bad input in a world of two: what each rank raised, to results-errors-rank<R>.json."""
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    results = {}

    def reduced_after_one(model, mean_over=2):
        acc = reduce_verify.ExactGradAccumulator(model, dist.group.WORLD)
        model(torch.ones(3, model.in_features, dtype=next(model.parameters()).dtype)).sum().backward()
        if next(model.parameters()).dtype == torch.float32:
            acc.add()
        return acc.reduce(mean_over=mean_over)

    results["length-disagrees"] = _outcome(
        lambda: reduced_after_one(torch.nn.Linear(4, 3 + 2000 * rank)))
    results["dtype-disagrees"] = _outcome(
        lambda: reduced_after_one(torch.nn.Linear(4, 3).to(torch.float64 if rank else torch.float32)))
    results["agrees"] = _outcome(lambda: reduced_after_one(torch.nn.Linear(4, 3)))
    results["mean-over-zero"] = _outcome(lambda: reduced_after_one(torch.nn.Linear(4, 3), 0))
    float64 = torch.nn.Linear(4, 3).double()
    float64(torch.ones(1, 4, dtype=torch.float64)).sum().backward()
    results["float64-gradient"] = _outcome(
        lambda: reduce_verify.ExactGradAccumulator(float64).add())
    mixed = torch.nn.Linear(4, 3)
    mixed.bias = torch.nn.Parameter(torch.zeros(3, device="meta"))
    results["parameters-on-two-devices"] = _outcome(
        lambda: reduce_verify.ExactGradAccumulator(mixed))
    dist.barrier()
    dist.destroy_process_group()
    (pathlib.Path(directory) / f"results-errors-rank{rank}.json").write_text(json.dumps(results))


def run_errors(directory):
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    mp.start_processes(_errors_main, args=(2, str(directory / "store-errors"), str(directory)),
                       nprocs=2, join=True, start_method="forkserver")
    return [json.loads((directory / f"results-errors-rank{r}.json").read_text())
            for r in range(2)]
