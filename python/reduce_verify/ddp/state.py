"""HookState: what a reduce_verify DDP hook keeps between calls."""

import torch.distributed as dist

from ..errors import InputError
from ..tensors import parse_op

AGREEMENT_POLICIES = ("auto", "every-bucket", "warmup")


class HookState:
    """The state argument of `model.register_comm_hook(state, hook)`; one per model.

    process_group: the group whose ranks reduce (default: the default group).
    op: "mean" (DDP's semantics: the sum × (1.0f / W), rounded once) or "sum".
    recorder: a Recorder that dumps chosen steps' buckets, or None.
    agreement: when the ranks agree on each bucket's record before its bytes move:
      "every-bucket" — every call (one small all-gather; what CPU tensors get under "auto");
      "warmup" — the buckets of the first two steps (DDP rebuilds its buckets after the
        first) and of every recorded step; later steps trust the layout DDP fixed (what CUDA
        tensors get under "auto": the check waits for the device, which would stall the
        backward pass on every bucket).

    `step` counts completed backward passes (the hook sees each step's last bucket)."""

    def __init__(self, process_group=None, op="mean", recorder=None, agreement="auto"):
        parse_op(op)
        if agreement not in AGREEMENT_POLICIES:
            raise InputError(f"agreement {agreement!r} is not one of "
                             f"{', '.join(AGREEMENT_POLICIES)}")
        self.process_group = process_group
        self.op = op
        self.recorder = recorder
        self.agreement = agreement
        self.step = 0

    def group(self):
        return self.process_group if self.process_group is not None else dist.group.WORLD

    def needs_agreement(self, device, recording):
        policy = self.agreement
        if policy == "auto":
            policy = "every-bucket" if device.type == "cpu" else "warmup"
        return policy == "every-bucket" or self.step < 2 or recording
