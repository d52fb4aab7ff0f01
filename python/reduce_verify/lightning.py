"""PyTorch Lightning: the DDP hooks and the exact gradient accumulator inside a Trainer
(docs/pytorch.md, "PyTorch Lightning").

    from reduce_verify.lightning import CommHook, ExactAccumulation

    # every micro-batch's gradient summed exactly, one rounding per step: the same weights for
    # 1 x 4, 2 x 2 and 4 x 1 devices x accumulate_grad_batches
    Trainer(accelerator="cpu", devices=2, strategy="ddp", accumulate_grad_batches=2,
            callbacks=[ExactAccumulation()])

    # or only DDP's all-reduce replaced by a reduce_verify hook (on any device)
    Trainer(..., strategy="ddp", callbacks=[CommHook(fixed_order_hook, HookState(op="mean"))])

Both are Callbacks, so they keep the user's strategy and its options. Lightning 2.6's
DDPStrategy(ddp_comm_hook=...) registers the hook only when the root device is CUDA: on CPU
processes it is dropped without a word, which is why CommHook exists. Only the package's
public API is used here (ExactGradAccumulator, reduce_verify.ddp)."""

from typing import Any, Optional

import torch

try:  # the standalone package first (what CI installs), then the unified one
    import pytorch_lightning as pl
except ImportError:  # pragma: no cover - depends on the installation
    try:
        import lightning.pytorch as pl  # type: ignore[no-redef,import-not-found]
    except ImportError as error:
        raise ImportError("reduce_verify.lightning needs pytorch_lightning (or lightning) "
                          "installed") from error

# The package's public names only (its internals are free to move).
from . import ExactGradAccumulator, InputError
from .ddp import HookState, fixed_order_hook, register

__all__ = ["CommHook", "ExactAccumulation"]


def _ddp_model(trainer: "pl.Trainer",
               who: str) -> Optional[torch.nn.parallel.DistributedDataParallel]:
    """The strategy's DDP module, None on a single device; InputError for anything else."""
    strategy = trainer.strategy
    name = type(strategy).__name__
    if isinstance(strategy, pl.strategies.SingleDeviceStrategy):
        return None
    if not isinstance(strategy, pl.strategies.DDPStrategy) or \
            getattr(strategy, "handles_gradient_accumulation", False):
        raise InputError(f"{who}: Trainer(strategy={name}) is not supported: only a single "
                         "device or DDPStrategy (strategy=\"ddp\", \"ddp_spawn\", ...), whose "
                         "gradients are whole on every rank")
    model = strategy.model
    if not isinstance(model, torch.nn.parallel.DistributedDataParallel):
        raise InputError(f"{who}: the {name}'s model is a {type(model).__name__}, not the "
                         "DistributedDataParallel module it wraps while fitting")
    # Private to Lightning, read only to name the conflict: a second hook cannot be registered,
    # and on CPU Lightning would have dropped this one silently anyway.
    if getattr(strategy, "_ddp_comm_hook", None) is not None:
        raise InputError(f"{who}: DDPStrategy(ddp_comm_hook=...) is set as well; give the hook "
                         "to one of them (on CPU processes Lightning 2.6 ignores ddp_comm_hook)")
    return model


class CommHook(pl.Callback):
    """Registers a reduce_verify DDP communication hook (fixed_order_hook or exact_hook) on the
    Trainer's DDP module when fitting starts, through reduce_verify.ddp.register and its
    checks, on CPU and CUDA alike. On a single device there is no all-reduce: nothing is
    registered and state.step stays 0. `state` (a HookState) counts the synchronised backward
    passes in state.step."""

    def __init__(self, hook=fixed_order_hook, state: Optional[HookState] = None):
        self.hook = hook
        self.state = HookState() if state is None else state

    def on_fit_start(self, trainer: "pl.Trainer", pl_module: "pl.LightningModule") -> None:
        model = _ddp_model(trainer, "CommHook")
        if model is not None:
            self.state = register(model, self.hook, self.state)


def _local_gradients(state: Any, bucket) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook that moves nothing: each rank keeps its own micro-batch
    gradient (DDP divides by W only without a hook), which ExactAccumulation adds exactly.
    No collective is issued, so none can hold a tensor past the process group's teardown.
    (DDP checks the return annotation: it must read Future[torch.Tensor].)"""
    future: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def _seed_the_unscaled_loss(loss: torch.Tensor, divisor: int):
    """Lightning back-propagates training_step's loss / accumulate_grad_batches. Its gradient
    with the seed 1/K is not the loss's gradient times 1/K in floating point unless K is a
    power of two (each backward op rounds RN(x / K), not RN(x) / K), and K differs between
    splits of one global batch. So the seed that reaches the loss's own node is set to exactly
    1: each micro-batch's gradient is then the gradient of its own loss, bit for bit what
    loss.backward() gives, and the accumulator divides by the micro-batches it counted.
    Returns the hook's handle (removed after the backward pass)."""
    node = loss.grad_fn
    if node is None:
        raise InputError("ExactAccumulation: the loss Lightning back-propagates has no "
                         "gradient function (training_step's loss does not require grad)")
    if node.name() not in ("DivBackward0", "DivBackward1"):
        raise InputError(
            f"ExactAccumulation: the loss Lightning back-propagates comes from {node.name()}, "
            "not from training_step's loss / accumulate_grad_batches: a precision plugin or "
            "strategy that scales the loss is not supported")
    saved = getattr(node, "_saved_other", None)
    if saved is not None:
        value = float(saved) if not isinstance(saved, torch.Tensor) else \
            (float(saved) if saved.numel() == 1 else None)
        if value != float(divisor):
            raise InputError(f"ExactAccumulation: the loss is divided by {saved}, not by "
                             f"accumulate_grad_batches = {divisor}")
    producer, output_nr = node.next_functions[0]
    if producer is None or producer.name().endswith("AccumulateGrad"):
        raise InputError("ExactAccumulation: training_step's loss is a leaf tensor; return "
                         "the loss computed from the model")

    def seed(grad_outputs):
        grads = list(grad_outputs)
        grads[output_nr] = torch.ones_like(grads[output_nr])
        return tuple(grads)
    return producer.register_prehook(seed)


class ExactAccumulation(pl.Callback):
    """Exact gradient accumulation under Lightning's accumulate_grad_batches
    (docs/accumulation.md): the weights depend on the global batch, not on how it is split
    over devices x accumulation steps.

    - after each micro-batch's backward (on_after_backward) its gradient goes into an
      ExactGradAccumulator (p.grad is None afterwards), the gradient of that micro-batch's own
      loss: Lightning's division of the loss by accumulate_grad_batches is undone at the
      gradient's seed (see _seed_the_unscaled_loss);
    - DDP never all-reduces in float: Lightning runs the accumulating micro-batches under
      no_sync(), and a communication hook that moves nothing serves the last one;
    - before the optimizer step (on_before_optimizer_step, ahead of Lightning's gradient
      clipping, which then clips the exact mean) p.grad receives RN(sum of every
      micro-batch's gradient on every rank / their count), one rounding.

    Refused with InputError, on every rank, before the first micro-batch: manual optimization,
    strategies other than a single device or DDPStrategy, DDPStrategy(ddp_comm_hook=...), a
    precision plugin with a gradient scaler ("16-mixed"). Put it before any other callback that
    reads gradients in on_before_optimizer_step: until then p.grad is None."""

    def __init__(self):
        self.accumulator: Optional[ExactGradAccumulator] = None
        self.micro_batches = 0  # of all ranks, in the last optimizer step
        self._seed_handle = None

    def on_fit_start(self, trainer: "pl.Trainer", pl_module: "pl.LightningModule") -> None:
        if not pl_module.automatic_optimization:
            raise InputError("ExactAccumulation: the LightningModule sets automatic_optimization "
                             "= False; with manual optimization use "
                             "reduce_verify.ExactGradAccumulator in training_step directly")
        if getattr(trainer.precision_plugin, "scaler", None) is not None:
            raise InputError(f"ExactAccumulation: Trainer(precision={trainer.precision!r}) scales "
                             "the loss with a GradScaler, whose unscaling and skipped steps "
                             "are not exact; use precision=\"32-true\" or \"bf16-mixed\"")
        ddp = _ddp_model(trainer, "ExactAccumulation")
        if ddp is not None:
            ddp.register_comm_hook(None, _local_gradients)
        # group None: the default process group under DDP, a world of one on a single device.
        self.accumulator = ExactGradAccumulator(pl_module, None)

    def on_before_backward(self, trainer: "pl.Trainer", pl_module: "pl.LightningModule",
                           loss: torch.Tensor) -> None:
        self._seed_handle = _seed_the_unscaled_loss(loss, trainer.accumulate_grad_batches)

    def on_after_backward(self, trainer: "pl.Trainer", pl_module: "pl.LightningModule") -> None:
        if self._seed_handle is not None:
            self._seed_handle.remove()
            self._seed_handle = None
        self._fitting().add()

    def on_before_optimizer_step(self, trainer: "pl.Trainer", pl_module: "pl.LightningModule",
                                 optimizer) -> None:
        self.micro_batches = self._fitting().reduce()

    def _fitting(self) -> ExactGradAccumulator:
        """The accumulator on_fit_start made; InputError outside a fit (a Trainer that skipped
        on_fit_start, or a callback reused after teardown)."""
        if self.accumulator is None:
            raise InputError("ExactAccumulation: no accumulator: the Trainer did not start "
                             "fitting with this callback (on_fit_start did not run)")
        return self.accumulator

    def teardown(self, trainer: "pl.Trainer", pl_module: "pl.LightningModule",
                 stage: str) -> None:
        if self._seed_handle is not None:
            self._seed_handle.remove()
            self._seed_handle = None
        self.accumulator = None  # frees the C accumulator
