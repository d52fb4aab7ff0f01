"""One rank of the PyTorch Lightning test's worlds (test_lightning.py): a LightningModule
trained 10 optimizer steps on a global batch of 4 micro-batches, on W = 1, 2 or 4 CPU
processes with accumulate_grad_batches = 4 / W.

The test starts the W processes itself (LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT in their
environment: Lightning then launches nothing and joins them over Gloo), so that each world has
a deadline and a hang is a failure, not a stuck CI job.

The data: item i of the dataset is micro-batch i, a pure function of i (DataLoader with
batch_size=None). The DataLoader's own sampler gives rank r items r, r + W, … in order
(use_distributed_sampler=False); rank r's k-th micro-batch of step s is item (sK + k)W + r,
so step s uses items 4s … 4s + 3 whatever the split: the same micro-batches, each with the same content and a fixed size, and
deterministic kernels on one thread (the prerequisite of docs/DESIGN.md §11). Each rank
records the items it saw per step, and the test checks that union.

Runs (each a fresh model from one seed and a fresh Trainer, one after another):
  exact          reduce_verify.lightning.ExactAccumulation (1 device: no process group);
  default        Lightning's own path: loss / K, float accumulation in p.grad, DDP's all-reduce;
  exact-clipped  ExactAccumulation with gradient_clip_val (clipping the exact mean);
  mutant         the test's mutant: ExactAccumulation with Lightning's 1/K left in the loss;
  exact-6        (W = 1, 2) ExactAccumulation on a global batch of 6: 1 x 6 and 2 x 3;
  exact-ddp1     (W = 1) ExactAccumulation under DDPStrategy, a process group of one;
  reference      (W = 1) no Lightning: the same module's training_step, 4 micro-batches added
                 to an ExactGradAccumulator, reduce(), the module's optimizer: what the
                 Lightning runs must equal (reference-6: the same for 6);
  hook-callback  (W = 2) CommHook(fixed_order_hook): the steps the hook saw;
  hook-strategy  (W = 2) DDPStrategy(ddp_comm_hook=fixed_order_hook): the steps it saw;
  errors         (W = 1) what ExactAccumulation refuses, as the exception's type and text.

Writes results-rank<R>.json to the folder given, then ends its process group."""

import argparse
import json
import os
import pathlib
import sys
import time

import torch
import torch.distributed as dist
import pytorch_lightning as pl
from pytorch_lightning.plugins.precision import MixedPrecision
from pytorch_lightning.strategies import DDPStrategy

import reduce_verify
from reduce_verify.ddp import HookState, fixed_order_hook
from reduce_verify.lightning import CommHook, ExactAccumulation

STEPS = 10
MICRO_BATCHES = 4        # per optimizer step, over all ranks
SAMPLES = 16             # per micro-batch
FEATURES = 32
CLASSES = 10
WIDTH = 256
CLIP = 0.05              # gradient_clip_val of exact-clipped: below the gradients' norm


class MicroBatches(torch.utils.data.Dataset):
    """Item i: micro-batch i, seeded by i alone; enough for STEPS steps of `per_step`."""

    def __init__(self, per_step=MICRO_BATCHES):
        self.per_step = per_step

    def __len__(self):
        return STEPS * self.per_step

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(4000 + index)
        x = torch.randn(SAMPLES, FEATURES, generator=generator)
        y = torch.randint(0, CLASSES, (SAMPLES,), generator=generator)
        return index, x, y


class Classifier(pl.LightningModule):
    def __init__(self, per_step=MICRO_BATCHES):
        super().__init__()
        self.per_step = per_step
        torch.manual_seed(1234)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(FEATURES, WIDTH), torch.nn.GELU(), torch.nn.LayerNorm(WIDTH),
            torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU(), torch.nn.LayerNorm(WIDTH),
            torch.nn.Linear(WIDTH, CLASSES))
        self.seen = []  # the dataset items of each micro-batch, in order

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        index, x, y = batch
        self.seen.append(int(index))
        return torch.nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)

    def train_dataloader(self):
        # Rank r takes items r, r + W, … in order (use_distributed_sampler=False): Lightning's
        # own DistributedSampler would shuffle the training set (one permutation whatever W,
        # so DDP runs would still agree), but a single device keeps the order as it is.
        data = MicroBatches(self.per_step)
        mine = range(self.global_rank, len(data), self.trainer.world_size)
        return torch.utils.data.DataLoader(data, batch_size=None, sampler=list(mine))


class ManualClassifier(Classifier):
    def __init__(self, per_step=MICRO_BATCHES):
        super().__init__(per_step)
        self.automatic_optimization = False


class KeepTheLoss(ExactAccumulation):
    """The mutant: Lightning's division by accumulate_grad_batches left in the gradients."""

    def on_before_backward(self, trainer, pl_module, loss):
        pass


def digest_of(model):
    return reduce_verify.digest(torch.cat([p.detach().reshape(-1) for p in model.parameters()]))


def trainer_for(world, callbacks=(), strategy=None, per_step=MICRO_BATCHES, **options):
    if strategy is None:
        strategy = "auto" if world == 1 else DDPStrategy(process_group_backend="gloo")
    options.setdefault("accumulate_grad_batches", per_step // world)
    return pl.Trainer(accelerator="cpu", devices=world, num_nodes=1, strategy=strategy,
                      max_epochs=1, use_distributed_sampler=False,
                      callbacks=list(callbacks), logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False,
                      num_sanity_val_steps=0, limit_val_batches=0, deterministic=True,
                      **options)


def fit(world, callbacks=(), strategy=None, module=Classifier, per_step=MICRO_BATCHES, **options):
    model = module(per_step)
    trainer = trainer_for(world, callbacks, strategy, per_step, **options)
    trainer.fit(model)
    per = per_step // world
    steps = [sorted(model.seen[s * per:(s + 1) * per]) for s in range(len(model.seen) // per)]
    return {"digest": digest_of(model), "global_step": trainer.global_step, "seen": steps}


def reference(per_step=MICRO_BATCHES):
    """The exact step without Lightning, in one process: what ExactAccumulation must give."""
    model = Classifier(per_step)
    optimizer = model.configure_optimizers()
    data = MicroBatches(per_step)
    accumulator = reduce_verify.ExactGradAccumulator(model)
    for step in range(STEPS):
        for k in range(per_step):
            model.training_step(data[step * per_step + k], k).backward()
            accumulator.add()
        accumulator.reduce(mean_over=per_step)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return {"digest": digest_of(model), "global_step": STEPS}


def refused(world, callbacks, strategy=None, module=Classifier, **options):
    try:
        fit(world, callbacks, strategy, module, **options)
    except Exception as error:  # the test reads the type and the message
        return {"type": type(error).__name__, "message": str(error)}
    return {"type": None, "message": "fitted without an error"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    arguments = parser.parse_args()
    world = int(os.environ["WORLD_SIZE"])
    rank = int(os.environ["LOCAL_RANK"])
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    results = {}
    times = {}

    def timed(name, call):
        begun = time.monotonic()
        results[name] = call()
        times[name] = round(time.monotonic() - begun, 2)

    callback = ExactAccumulation()
    timed("exact", lambda: fit(world, [callback]))
    results["exact"]["micro_batches"] = callback.micro_batches  # of the last step, all ranks
    timed("default", lambda: fit(world))
    timed("exact-clipped", lambda: fit(world, [ExactAccumulation()], gradient_clip_val=CLIP,
                                       gradient_clip_algorithm="norm"))
    timed("mutant", lambda: fit(world, [KeepTheLoss()]))
    if world <= 2:
        # A global batch of 6: K = 6 and 3, where Lightning's 1/K is not exact.
        timed("exact-6", lambda: fit(world, [ExactAccumulation()], per_step=6))
    if world == 1:
        timed("reference", reference)
        timed("reference-6", lambda: reference(6))
        ddp = lambda **kw: DDPStrategy(process_group_backend="gloo", **kw)  # noqa: E731
        timed("exact-ddp1", lambda: fit(world, [ExactAccumulation()], ddp()))
        timed("errors", lambda: {
            # K = 1: with K > 1 Lightning refuses manual optimization itself.
            "manual": refused(world, [ExactAccumulation()], module=ManualClassifier,
                              accumulate_grad_batches=1),
            # On the CPU Lightning turns precision="16-mixed" into bf16 (no scaler): the
            # plugin is given with its scaler instead.
            "scaler": refused(world, [ExactAccumulation()], plugins=[MixedPrecision(
                "16-mixed", "cpu", scaler=torch.amp.GradScaler("cpu"))]),
            "hook-twice": refused(world, [ExactAccumulation()],
                                  ddp(ddp_comm_hook=fixed_order_hook,
                                      ddp_comm_state=HookState())),
        })
    if world == 2:
        state = HookState(op="mean")
        timed("hook-callback", lambda: fit(world, [CommHook(fixed_order_hook, state)]))
        results["hook-callback"]["hook_steps"] = state.step
        ignored = HookState(op="mean")
        timed("hook-strategy", lambda: fit(world, strategy=DDPStrategy(
            process_group_backend="gloo", ddp_comm_hook=fixed_order_hook, ddp_comm_state=ignored)))
        results["hook-strategy"]["hook_steps"] = ignored.step
    results["times"] = times
    folder = pathlib.Path(arguments.folder)
    (folder / f"results-rank{rank}.json").write_text(json.dumps(results, indent=1))
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    print(f"rank {rank} of {world}: done", file=sys.stderr)


if __name__ == "__main__":
    main()
