"""HookState: what a reduce_verify DDP hook keeps between calls, and the errors it raised."""

import contextlib
from typing import TYPE_CHECKING, Iterator, Optional

import torch
import torch.distributed as dist

from ..errors import InputError, ReduceVerifyError
from ..tensors import parse_op

if TYPE_CHECKING:
    from ..recorder import Recorder

AGREEMENT_POLICIES = ("auto", "every-bucket", "warmup")


class HookState:
    """The state argument of `model.register_comm_hook(state, hook)`; one per model.

    process_group: the group whose ranks reduce (default: the default group).
    op: "mean" (DDP's semantics: the sum × (1.0f / W), rounded once) or "sum".
    recorder: a Recorder that dumps chosen steps' buckets, or None: the hooks then run as
      recorder.wrap(hook) would (Recorder.wrap is the other way to plug it in).
    agreement: when the ranks agree on each bucket's record before its bytes move:
      "every-bucket" — every call (one small all-gather; what CPU tensors get under "auto");
      "warmup" — the buckets of the first two steps (DDP rebuilds its buckets after the
        first) and of every recorded step; later steps trust the layout DDP fixed (what CUDA
        tensors get under "auto": the check waits for the device, which would stall the
        backward pass on every bucket).
    agreement_timeout: seconds an agreement may wait for the other ranks before WorldTimeout
      (a rank running DDP's default hook never joins it). It also bounds how long one rank
      may lag behind the others at a checked bucket (a rank saving a checkpoint between
      steps, say): raise it where ranks pause longer than that.

    `step` counts the synchronised backward passes the hook has seen (DDP calls the hook only
    on those: under no_sync() it is not called). With one optimizer step per synchronised
    backward pass, the usual loop with or without gradient accumulation, that is the number
    of optimizer steps taken before this one.

    `error` is the last exception a hook of this state raised: inside backward() torch
    re-raises it as a RuntimeError; `with state.original_errors(): loss.backward()` raises
    the original instead (reduce_verify.InputError, WorldDisagreement, ...).

    `recording` is set by a Recorder's wrapper for the bucket it is handing to the hook
    (True: the bucket is recorded, and the ranks' agreement runs on it and compares that);
    None outside such a call."""

    def __init__(self, process_group: Optional[dist.ProcessGroup] = None, op: str = "mean",
                 recorder: Optional["Recorder"] = None, agreement: str = "auto",
                 agreement_timeout: float = 300.0):
        parse_op(op)
        if agreement not in AGREEMENT_POLICIES:
            raise InputError(f"agreement {agreement!r} is not one of "
                             f"{', '.join(AGREEMENT_POLICIES)}")
        if not agreement_timeout > 0:
            raise InputError(f"agreement_timeout {agreement_timeout!r} is not a positive "
                             "number of seconds")
        self.process_group = process_group
        self.op = op
        self.recorder = recorder
        self.agreement = agreement
        self.agreement_timeout = float(agreement_timeout)
        self.step = 0
        self.error: Optional[BaseException] = None
        self.recording: Optional[bool] = None
        self._counts_forwards = False  # register() counts forward passes (a recorder's steps)
        self._forwards = 0  # forward passes since the last synchronised step (register())
        self._accumulation_warned = False

    def __repr__(self) -> str:
        group = "default" if self.process_group is None else repr(self.process_group)
        return (f"HookState(op={self.op!r}, step={self.step}, agreement={self.agreement!r}, "
                f"agreement_timeout={self.agreement_timeout:g}, process_group={group}, "
                f"recorder={self.recorder!r})")

    def group(self) -> Optional[dist.ProcessGroup]:
        return self.process_group if self.process_group is not None else dist.group.WORLD

    def needs_agreement(self, device: torch.device, recording: bool) -> bool:
        policy = self.agreement
        if policy == "auto":
            policy = "every-bucket" if device.type == "cpu" else "warmup"
        return policy == "every-bucket" or self.step < 2 or recording

    @contextlib.contextmanager
    def original_errors(self) -> Iterator[None]:
        """Inside, a RuntimeError that torch raised for this state's hook is replaced by the
        exception the hook raised (its class, message and traceback), chained to torch's."""
        self.error = None
        try:
            yield
        except RuntimeError as wrapped:
            original = self.error
            if (isinstance(original, ReduceVerifyError) and original is not wrapped
                    and str(original) in str(wrapped)):
                raise original from wrapped
            raise


_default_state: Optional[HookState] = None


def resolve_state(state: Optional[HookState]) -> HookState:
    """The state a hook was registered with: a HookState, or None for one shared default
    (the default group, mean); anything else is an InputError naming it."""
    global _default_state
    if state is None:
        if _default_state is None:
            _default_state = HookState()
        return _default_state
    if not isinstance(state, HookState):
        raise InputError(f"the hook's state is a {type(state).__name__}; pass "
                         "reduce_verify.ddp.HookState(...) (or None for the default group, mean)")
    return state
