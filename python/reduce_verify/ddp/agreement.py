"""Agreement before bytes move: the ranks all-gather a small record describing the bucket
they are about to reduce (contract, op, W, length, bucket index, step, whether the step is
recorded) and compare it, so a world whose ranks would exchange mismatched data raises
WorldDisagreement on every rank, naming who has what, instead of hanging the collective or
reducing garbage (the core does the same: docs/DESIGN.md §5.5)."""

import torch
import torch.distributed as dist

from ..errors import WorldDisagreement

_MAGIC = 0x52564448  # "RVDH": a peer that is not running this hook's record sends other words
FIELDS = ("magic", "contract", "op", "world", "bucket length", "bucket index", "step", "recording")
CONTRACT_CODES = {"fixed-order": 1, "exact": 2}
OP_CODES = {"sum": 0, "mean": 1}


def agree(group, device, contract, op, world, length, index, step, recording):
    record = [_MAGIC, CONTRACT_CODES[contract], OP_CODES[op], world, length, index, step,
              int(recording)]
    mine = torch.tensor(record, dtype=torch.int64, device=device)
    rows = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(rows, mine, group=group)
    table = [row.tolist() for row in rows]  # a host copy: waits for the gather
    if all(row == table[0] for row in table):
        return
    differences = []
    for field, name in enumerate(FIELDS):
        holders = {}
        for rank, row in enumerate(table):
            holders.setdefault(_spell(name, row[field]), []).append(rank)
        if len(holders) > 1:
            held = "; ".join(f"rank(s) {', '.join(map(str, ranks))}: {value}"
                             for value, ranks in sorted(holders.items(), key=lambda h: h[1]))
            differences.append(f"{name} ({held})")
    raise WorldDisagreement(
        f"the ranks disagree on bucket {index} of step {step} before any gradient moved: "
        + ", ".join(differences) + " (a differing magic: a rank is not running a reduce_verify "
        "hook)")


def _spell(field, value):
    for name, codes in (("contract", CONTRACT_CODES), ("op", OP_CODES)):
        if field == name:
            return next((k for k, v in codes.items() if v == value), value)
    return value
