"""Real DDP training worlds for the tests: W processes (forked from a forkserver that has
imported torch once), a Gloo process group rendezvousing through a file:// store in a temp
dir, and a list of training configurations run one after another in the same world. Each
rank writes what it saw to results-rank<R>.json; the tests read them.

Everything that decides the bits is a pure function of (config, step, data rank): the model's
initial parameters (seeded), each rank's batch (seeded by step and data rank), one intra-op
thread. So a single process can replay the same per-rank gradients (replay_training)."""

import json
import os
import pathlib

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import reduce_verify
from reduce_verify.ddp import HookState, exact_hook, fixed_order_hook

STEPS = 4
BATCH = 24
LEARNING_RATE = 0.05
TINY_BUCKET_MB = 0.1  # 25 k floats: one bucket per hidden layer past the first MB
HIDDEN_LAYERS = 12


def make_model():
    # 12 hidden layers of 256 (about 0.8 M parameters, 3.2 MB): DDP's first bucket takes 1 MB
    # whatever the cap, and the cap then decides how the other layers are bucketed.
    torch.manual_seed(1234)
    layers = [torch.nn.Linear(16, 256), torch.nn.Tanh()]
    for _ in range(HIDDEN_LAYERS):
        layers += [torch.nn.Linear(256, 256), torch.nn.Tanh()]
    layers.append(torch.nn.Linear(256, 4))
    return torch.nn.Sequential(*layers)


def batch(step, data_rank):
    generator = torch.Generator().manual_seed(100_000 * step + data_rank)
    x = torch.randn(BATCH, 16, generator=generator)
    y = torch.randn(BATCH, 4, generator=generator)
    return x, y


def flat_parameters(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def data_rank_of(rank, world, config):
    """Which rank's data a rank trains on: itself, or, with permute_data, the mirror rank."""
    return world - 1 - rank if config.get("permute_data") else rank


def train_one(config, rank, world, directory):
    model = make_model()
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, bucket_cap_mb=config["bucket_cap_mb"],
        gradient_as_bucket_view=config["gradient_as_bucket_view"])
    recorder = None
    if config.get("record_step") is not None:
        recorder = reduce_verify.Recorder(directory / f"recording-{config['name']}",
                                          steps=[config["record_step"]])
    if config["hook"] != "default":
        hook = fixed_order_hook if config["hook"] == "fixed-order" else exact_hook
        if config.get("record_by") == "wrap":  # the Recorder wraps the hook
            ddp.register_comm_hook(HookState(op="mean"), recorder.wrap(hook))
        else:  # or rides in the hook's state
            ddp.register_comm_hook(HookState(op="mean", recorder=recorder), hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=LEARNING_RATE)
    for step in range(STEPS):
        x, y = batch(step, data_rank_of(rank, world, config))
        optimizer.zero_grad(set_to_none=False)
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()
    if recorder:
        recorder.close()  # its end record: a forkserver child exits without atexit
    return {"name": config["name"], "digest": reduce_verify.digest(flat_parameters(model)),
            "recorded": recorder.local if recorder else []}


def _world_main(index, world, placement, store, directory, configs):
    rank = placement[index]
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    results = [train_one(config, rank, world, pathlib.Path(directory)) for config in configs]
    dist.barrier()
    dist.destroy_process_group()
    path = pathlib.Path(directory) / f"results-rank{rank}.json"
    path.write_text(json.dumps(results))


def run_world(world, configs, directory, placement=None):
    """Runs `configs` in one world of `world` processes; process i is rank placement[i]
    (default: i). Returns the per-rank results, indexed by rank."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    placement = list(placement or range(world))
    store = directory / "store"
    mp.start_processes(_world_main, args=(world, placement, str(store), str(directory), configs),
                       nprocs=world, join=True, start_method="forkserver")
    return [json.loads((directory / f"results-rank{r}.json").read_text()) for r in range(world)]


def replay_training(config, world):
    """The same training in one process: every rank's gradients computed here, reduced through
    the core (reduce_verify.reduce), applied by the same optimizer. Returns the digest of the
    final parameters."""
    torch.set_num_threads(1)
    contract = config["hook"]
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    for step in range(STEPS):
        per_rank = []
        for rank in range(world):
            # As in the DDP ranks: no gradient before the first backward, then zeroed ones that
            # the backward adds to (0 + g: a −0 gradient reads +0 from the second step on).
            model.zero_grad(set_to_none=step == 0)
            x, y = batch(step, data_rank_of(rank, world, config))
            torch.nn.functional.mse_loss(model(x), y).backward()
            per_rank.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]))
        reduced = reduce_verify.reduce(torch.stack(per_rank), op="mean", contract=contract)
        offset = 0
        for p in model.parameters():
            p.grad.copy_(reduced[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        optimizer.step()
    return reduce_verify.digest(flat_parameters(model))


def prepare_forkserver():
    """Imports torch and the package once in the forkserver, so each rank starts in
    milliseconds instead of importing torch again."""
    mp.set_forkserver_preload(["torch", "torch.distributed", "reduce_verify", "ddp_training"])
