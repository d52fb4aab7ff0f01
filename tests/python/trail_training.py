"""DDP training worlds that keep a reduce_verify.Trail, for test_trail.py: W processes over
Gloo (the model and batches of ddp_training), a list of configurations run one after the
other, each writing trail-<name>.jsonl in the world's folder.

A configuration names its hook ("fixed-order", or "allreduce" for torch's own
default_hooks.allreduce_hook, DDP's default all-reduce as a Python hook), its bucket cap, and
optionally a perturbation (one rank's batch changed at one step), permuted data (rank r
trains on rank W−1−r's batches), or a resume (a checkpoint
after `resume_at` steps, one more step that the crash loses, then a fresh model, DDP and
Trail restored from the checkpoint finish the run)."""

import os
import pathlib

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

import ddp_training
import reduce_verify
from reduce_verify.ddp import HookState, fixed_order_hook


def _trained_ddp(config, model_state=None):
    model = ddp_training.make_model()
    if model_state is not None:
        model.load_state_dict(model_state)
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=config["bucket_cap_mb"])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=ddp_training.LEARNING_RATE, momentum=0.9)
    return model, ddp, optimizer


def _register(ddp, trail, config):
    if config["hook"] == "fixed-order":
        ddp.register_comm_hook(HookState(op="mean"), trail.wrap(fixed_order_hook))
    else:
        ddp.register_comm_hook(None, trail.wrap(default_hooks.allreduce_hook))


def _step(ddp, optimizer, trail, model, config, step, rank, world):
    x, y = ddp_training.batch(step, world - 1 - rank if config.get("permute_data") else rank)
    if config.get("perturb") == [step, rank]:
        x = x.clone()
        x[0, 0] += 1e-3
    optimizer.zero_grad(set_to_none=False)
    torch.nn.functional.mse_loss(ddp(x), y).backward()
    optimizer.step()
    trail.end_step(model.parameters(), optimizer)


def train_one(config, rank, world, directory):
    path = directory / f"trail-{config['name']}.jsonl"
    model, ddp, optimizer = _trained_ddp(config)
    trail = reduce_verify.Trail(path, optimizer_state=True)
    _register(ddp, trail, config)
    resume_at = config.get("resume_at")
    for step in range(ddp_training.STEPS):
        if step == resume_at:
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "trail": trail.state_dict()}
            checkpoint = {k: _copied(v) for k, v in checkpoint.items()}
            _step(ddp, optimizer, trail, model, config, step, rank, world)  # lost in the crash
            del trail  # the crash: no end record, nothing more written
            dist.barrier()
            model, ddp, optimizer = _trained_ddp(config, checkpoint["model"])
            optimizer.load_state_dict(checkpoint["optimizer"])
            trail = reduce_verify.Trail(path, optimizer_state=True)
            trail.load_state_dict(checkpoint["trail"])
            _register(ddp, trail, config)
        _step(ddp, optimizer, trail, model, config, step, rank, world)
    trail.close()


def _copied(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return value


def _world_main(rank, world, store, directory, configs):
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    for config in configs:
        train_one(config, rank, world, pathlib.Path(directory))
        dist.barrier()
    dist.destroy_process_group()


def run_world(world, configs, directory):
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    mp.start_processes(_world_main, args=(world, str(directory / "store"), str(directory),
                                          configs), nprocs=world, join=True,
                       start_method="forkserver")
    return {config["name"]: directory / f"trail-{config['name']}.jsonl" for config in configs}


def prepare_forkserver():
    mp.set_forkserver_preload(["torch", "torch.distributed", "reduce_verify", "ddp_training",
                               "trail_training"])
