"""Agreement before bytes move: the ranks all-gather a small record describing the bucket
they are about to reduce (contract, op, W, length, bucket index, step, whether the step is
recorded, dtype) and compare it, so a world whose ranks would exchange mismatched data raises
WorldDisagreement on every rank, naming who has what, instead of hanging the collective or
reducing garbage (the core does the same: docs/DESIGN.md §5.5).

The gather has a deadline of its own (HookState's agreement_timeout, in seconds): a rank
that runs another hook (DDP's default all-reduce) issues another collective, which never
matches the gather, and the process group's own timeout (30 minutes by default) is far too
long to learn that."""

import datetime
import time
from typing import Any, Dict, List, NoReturn, Optional

import torch
import torch.distributed as dist

from .. import _collectives
from ..errors import WorldDisagreement, WorldTimeout

_MAGIC = 0x52564448  # "RVDH": a peer that is not running this hook's record sends other words
FIELDS = ("magic", "contract", "op", "world", "bucket length", "bucket index", "step", "recording",
          "dtype")
CONTRACT_CODES = {"fixed-order": 1, "exact": 2}
OP_CODES = {"sum": 0, "mean": 1}
DTYPE_CODES = {"f32": 0, "bf16": 1, "f16": 2}  # the C ABI's rv_dtype


def agree(group: Optional[dist.ProcessGroup], device: torch.device, contract: str, op: str,
          world: int, length: int, index: int, step: int, recording: bool, timeout: float,
          dtype: int = 0) -> None:
    """Raises WorldDisagreement unless every rank's record is this one; dtype is the
    bucket's rv_dtype."""
    record = [_MAGIC, CONTRACT_CODES[contract], OP_CODES[op], world, length, index, step,
              int(recording), dtype]
    mine = torch.tensor(record, dtype=torch.int64, device=device)
    rows = [torch.empty_like(mine) for _ in range(world)]
    work = _collectives.launch(dist.all_gather, rows, mine, group=group)
    _wait(work, device, timeout, index, step)
    table = [row.tolist() for row in rows]
    if all(row == table[0] for row in table):
        return
    raise WorldDisagreement(describe(table, index, step))


def describe(table: List[List[int]], index: int, step: int) -> str:
    """What differs between the ranks' records, field by field, rank by rank."""
    differences = []
    differing_fields = set()
    for field, name in enumerate(FIELDS):
        holders: Dict[Any, List[int]] = {}
        for rank, row in enumerate(table):
            holders.setdefault(_spell(name, row[field]), []).append(rank)
        if len(holders) > 1:
            differing_fields.add(name)
            held = "; ".join(f"rank(s) {', '.join(map(str, ranks))}: {value}"
                             for value, ranks in sorted(holders.items(), key=lambda h: h[1]))
            differences.append(f"{name} ({held})")
    if "magic" in differing_fields:
        # The other words of such a row are whatever that rank's collective sent: not fields.
        strangers = [rank for rank, row in enumerate(table) if row[0] != _MAGIC]
        return (f"the ranks disagree on bucket {index} of step {step} before any gradient "
                f"moved: rank(s) {', '.join(map(str, strangers))} sent no reduce_verify "
                "record (they are not running a reduce_verify hook, or another collective "
                f"met this one); every difference: {', '.join(differences)}")
    return (f"the ranks disagree on bucket {index} of step {step} before any gradient moved: "
            + ", ".join(differences))


def _wait(work: Any, device: torch.device, timeout: float, index: int, step: int) -> None:
    """Waits for the agreement's gather, at most `timeout` seconds."""
    if device.type == "cuda":
        # A CUDA work's wait() only orders streams; is_completed() asks the device.
        deadline = time.monotonic() + timeout
        pause = 1e-5
        while not work.is_completed():
            if time.monotonic() > deadline:
                _timed_out(timeout, index, step)
            time.sleep(pause)
            pause = min(2 * pause, 1e-3)
        work.wait()  # the current stream after the gather, as every use of its output needs
        return
    try:
        work.wait(timeout=datetime.timedelta(seconds=timeout))
    except RuntimeError as error:
        if "timed out" in str(error):
            _timed_out(timeout, index, step, error)
        raise


def _timed_out(timeout: float, index: int, step: int,
               cause: Optional[BaseException] = None) -> NoReturn:
    raise WorldTimeout(
        f"the ranks' agreement on bucket {index} of step {step} did not complete within the "
        f"hook's deadline of {timeout:g} s (HookState(agreement_timeout=...)): a rank is not "
        "running a reduce_verify hook (DDP's default all-reduce or another hook), or has "
        "stopped, or is further behind than the deadline. The process group cannot be used "
        "after this: let the process exit") from cause


def _spell(field: str, value: int) -> Any:
    for name, codes in (("contract", CONTRACT_CODES), ("op", OP_CODES), ("dtype", DTYPE_CODES)):
        if field == name:
            return next((k for k, v in codes.items() if v == value), value)
    return value
