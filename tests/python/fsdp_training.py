"""One rank of a training world for test_fsdp.py: a transformer block (1.3 M parameters,
LayerNorm, cross-entropy, AdamW, gradient clipping at a norm that acts) trained 10 optimizer
steps on a global batch of 8 micro-batches, as one process, DDP, ZeRO-1 or FSDP2, W ranks x K
micro-batches each.

    python fsdp_training.py FOLDER RUNS_JSON      (RANK and WORLD_SIZE in the environment)

Each micro-batch is a pure function of (step, index) with a fixed size, and the kernels are
deterministic (torch.use_deterministic_algorithms(True), one thread), so a micro-batch's gradient
does not depend on the rank that computes it (docs/DESIGN.md §11). Runs (RUNS_JSON: a list of
{"name", "mode", "split", "mutant"}):

  single        one process: ExactGradAccumulator, reduce_verify.clip_grad_norm_;
  ddp           DDP, every micro-batch under no_sync(), ExactGradAccumulator over the world;
  zero1         the same with torch's ZeroRedundancyOptimizer (ZeRO-1);
  ddp-hook      DDP with reduce_verify.ddp.exact_hook, one micro-batch a rank (K = 1);
  zero1-hook    the same with ZeroRedundancyOptimizer;
  fsdp1-hook    FSDP1 (FullyShardedDataParallel) with reduce_verify.fsdp.register_fsdp1, K = 1;
  fsdp-k1       FSDP2 with register(model, contract) and no micro_batch(), K = 1 (a run's
                "contract": exact, the default, or fixed-order, also for ddp-hook);
  fsdp          FSDP2 with reduce_verify.fsdp.register(model, "exact") and micro_batch();
  *-default     the same model with torch's own path: float accumulation (no_sync() or
                set_requires_gradient_sync(False)), the loss scaled by W / 8, FSDP's or DDP's
                reduction, torch.nn.utils.clip_grad_norm_.

A run {"mode": "teardown"} (anywhere in the list) ends the world as a user's script does:
dist.destroy_process_group() and the interpreter's exit, instead of os._exit.

trail: a file name in FOLDER: the run keeps a reduce_verify.Trail there (FSDP: through
register(..., trail=)).

recording: a folder name in FOLDER (mode fsdp-k1): a reduce_verify.Recorder of steps 1 and 2
there, through register(..., recorder=); the run's result then holds the rank's `local`
records.

split: the micro-batches per rank ("even": 8 / W each; or a list such as [3, 3, 2], dealt from
a per-step shuffle). A rank with fewer micro-batches than another runs the others' extra
backward passes with contributes=False (FSDP needs every rank in every collective).

The mutants (test-only switches): "norm-float" clips by a norm summed in float32 (each shard's
torch norm, squared, all-reduced); "accumulate-float" accumulates the micro-batches in float
(set_requires_gradient_sync(False)) and reduce-scatters their sum once; "wrong-shard" hands our
reduce-scatter each rank's input with its rows rotated by one, so every rank reduces another
rank's shard."""

import json
import os
import pathlib
import random
import sys
import time
import traceback

import torch
import torch.distributed as dist

import reduce_verify
from transformer_block import loss_of as block_loss, make_model

STEPS = 10
MICRO_BATCHES = 8
LEARNING_RATE = 1e-3
MAX_NORM = 0.5  # below the block's gradient norm: clipping acts
# FSDP_DEVICE=cuda (test_fsdp_gpu.py): rank r trains on GPU r over NCCL; the bad-input and
# contract checks stay on the CPU.
DEVICE = torch.device("cpu")


def loss_of(model, step, index):
    return block_loss(model, step, index, DEVICE)


def assignment(step, world, split):
    """The micro-batches each rank holds at `step`."""
    if split == "even":
        per = MICRO_BATCHES // world
        return [list(range(r * per, (r + 1) * per)) for r in range(world)]
    order = list(range(MICRO_BATCHES))
    random.Random(77 + step).shuffle(order)
    held, start = [], 0
    for count in split:
        held.append(order[start:start + count])
        start += count
    return held


def full_digest(parameters):
    flat = []
    for p in parameters:
        full = p.full_tensor() if hasattr(p, "full_tensor") else p
        flat.append(full.detach().reshape(-1))
    return reduce_verify.digest(torch.cat(flat))


def float_norm_clip(parameters, max_norm):
    """The mutant: the norm from float32 sums (each rank's local shards), all-reduced."""
    parameters = list(parameters)
    grads = [p.grad.to_local() if hasattr(p.grad, "to_local") else p.grad for p in parameters]
    square = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    square = square * square
    dist.all_reduce(square)
    norm = torch.sqrt(square)
    coefficient = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
    for g in grads:
        g.mul_(coefficient)
    return norm


class RotatedRows:
    """The wrong-shard mutant: our reduce-scatter, fed each input with its rows rotated."""

    def __init__(self, comm):
        self.comm = comm

    def allocate(self, size, *, dtype, device):
        return self.comm.allocate(size, dtype=dtype, device=device)

    def __call__(self, output_tensor, input_tensor, group, op, async_op=False):
        world = dist.get_world_size(group)
        rotated = input_tensor.view(world, -1).roll(1, dims=0).reshape(-1).contiguous()
        return self.comm(output_tensor, rotated, group, op, async_op)


def fsdp_model(world):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    model = make_model().to(DEVICE)
    mesh = init_device_mesh(DEVICE.type, (world,))
    fully_shard(model.layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def train(run, rank, world):
    mode, mutant = run["mode"], run.get("mutant")
    split = run.get("split", "even")
    default = mode.endswith("-default")
    base = mode[:-len("-default")] if default else mode
    contract = run.get("contract", "exact")
    if base in ("fsdp", "fsdp-k1"):
        model = fsdp_model(world)
    elif base == "fsdp1-hook":
        from torch.distributed.fsdp import FullyShardedDataParallel
        model = FullyShardedDataParallel(make_model().to(DEVICE), device_id=DEVICE,
                                         use_orig_params=True)
    else:
        model = make_model().to(DEVICE)
    forward = model
    if base in ("ddp", "zero1", "ddp-hook", "zero1-hook"):
        forward = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=None if DEVICE.type == "cpu" else [DEVICE])
    if base in ("zero1", "zero1-hook"):
        from torch.distributed.optim import ZeroRedundancyOptimizer
        optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW,
                                            lr=LEARNING_RATE)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    accumulator = reduction = trail = recorder = None
    if run.get("trail"):  # a reduce_verify.Trail of the run, for `reduce-verify audit`
        trail = reduce_verify.Trail(pathlib.Path(sys.argv[1]) / run["trail"],
                                    dist.group.WORLD if dist.is_initialized() else None)
    if base in ("ddp-hook", "zero1-hook"):
        reduce_verify.ddp.register(forward, reduce_verify.ddp.exact_hook if contract == "exact"
                                   else reduce_verify.ddp.fixed_order_hook)
    elif base == "fsdp-k1":
        if run.get("recording"):
            recorder = reduce_verify.Recorder(pathlib.Path(sys.argv[1]) / run["recording"],
                                              steps=[1, 2])
        reduction = reduce_verify.fsdp.register(model, contract=contract, recorder=recorder)
    elif base == "fsdp1-hook":
        reduction = reduce_verify.fsdp.register_fsdp1(model, contract="exact")
    elif base == "fsdp" and not default:
        reduction = reduce_verify.fsdp.register(model, contract="exact", trail=trail)
        if mutant == "wrong-shard":
            for module in model.modules():
                comm = getattr(module, "_get_fsdp_state", None) and \
                    reduce_verify.fsdp._param_groups(module)
                if comm:
                    module.set_custom_reduce_scatter(RotatedRows(comm[0]._reduce_scatter_comm))
    elif not default:
        accumulator = reduce_verify.ExactGradAccumulator(
            forward, dist.group.WORLD if dist.is_initialized() else None)
    hooked = base in ("ddp-hook", "zero1-hook", "fsdp1-hook", "fsdp-k1")
    norms = []
    for step in range(STEPS):
        if hooked:  # K = 1: micro-batch `rank` of the step, the hook's mean over W
            held = [[r] for r in range(world)]
        else:
            held = assignment(step, world, split)
        mine = held[rank]
        passes = max(len(h) for h in held)
        optimizer.zero_grad(set_to_none=True)
        for k in range(passes):
            last = k == passes - 1
            contributes = k < len(mine)
            index = mine[k] if contributes else mine[-1]
            if hooked:
                loss_of(forward, step, index).backward()
            elif base == "fsdp" and not default and mutant != "accumulate-float":
                reduction.micro_batch(last=last, contributes=contributes)
                loss_of(model, step, index).backward()
            elif base == "fsdp":
                # FSDP's own accumulation: unsharded float sums, one reduction at the last.
                model.set_requires_gradient_sync(last)
                if mutant == "accumulate-float":
                    reduction.plain()
                scale = world / MICRO_BATCHES if contributes else 0.0
                (loss_of(model, step, index) * scale).backward()
            elif default:
                scale = world / MICRO_BATCHES if contributes else 0.0
                if base == "single" or last:
                    (loss_of(forward, step, index) * scale).backward()
                else:
                    with forward.no_sync():
                        (loss_of(forward, step, index) * scale).backward()
            else:
                if base == "single":
                    loss_of(forward, step, index).backward()
                else:
                    with forward.no_sync():
                        loss_of(forward, step, index).backward()
                if contributes:
                    accumulator.add()
                else:
                    optimizer.zero_grad(set_to_none=True)
        if accumulator is not None:
            accumulator.reduce(mean_over=MICRO_BATCHES)
        if default:
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
            if hasattr(norm, "full_tensor"):
                norm = norm.full_tensor()
        elif mutant == "norm-float":
            norm = float_norm_clip(model.parameters(), MAX_NORM)
        elif base == "fsdp1-hook":  # FSDP1's parameters hold this rank's flat shard
            norm = reduce_verify.clip_grad_norm_(model.parameters(), MAX_NORM,
                                                 group=dist.group.WORLD)
        else:
            norm = reduce_verify.clip_grad_norm_(model.parameters(), MAX_NORM)
        norms.append(float(norm))
        optimizer.step()
        if trail is not None:
            trail.end_step(model.parameters(), optimizer)
        if recorder is not None:
            recorder.end_step()
    if trail is not None:
        trail.close()
    if recorder is not None:
        recorder.close()
    if base == "fsdp1-hook":
        from torch.distributed.fsdp import FullyShardedDataParallel
        with FullyShardedDataParallel.summon_full_params(model):
            final = full_digest(model.parameters())
    else:
        final = full_digest(model.parameters())
    return {"digest": final, "norms": norms,
            "parameters": sum(p.numel() for p in make_model().parameters()),
            "recorded": recorder.local if recorder is not None else None}


def errors(rank, world):
    """Bad input, each case on every rank: what was raised (type and message)."""
    from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
    from torch.distributed.fsdp import fully_shard
    # Per-parameter meshes (several parameter groups in one module) come with torch 2.13's
    # ShardPlacementResult; torch 2.11 makes one group a module, so that case is left out there.
    try:
        from torch.distributed.fsdp._fully_shard._fsdp_common import (FSDPMeshInfo,
                                                                      ShardPlacementResult)
    except ImportError:
        ShardPlacementResult = None
    from torch.distributed.tensor import Shard
    results = {}

    def outcome(name, call):
        try:
            call()
            results[name] = {"raised": None}
        except Exception as error:  # the test reads the type and the message
            results[name] = {"raised": type(error).__name__, "message": str(error)}

    mesh = init_device_mesh("cpu", (world,))

    def several_groups():
        other = DeviceMesh.from_group(dist.new_group(list(range(world))), "cpu")
        info = FSDPMeshInfo(other, shard_mesh_dim=0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 4))
        fully_shard(model, mesh=mesh, shard_placement_fn=lambda p: ShardPlacementResult(
            Shard(0), info) if p.dim() == 1 else None)
        reduce_verify.fsdp.register(model, contract="exact")
    if ShardPlacementResult is not None:
        outcome("several-groups", several_groups)

    def float64():
        model = torch.nn.Sequential(torch.nn.Linear(8, 8)).double()
        fully_shard(model, mesh=mesh)
        reduce_verify.fsdp.register(model, contract="exact")
    outcome("float64", float64)

    def comm_of(contract="exact"):
        model = torch.nn.Sequential(torch.nn.Linear(8, 8))
        fully_shard(model, mesh=mesh)
        return model, reduce_verify.fsdp.register(model, contract=contract)

    def undefined_op():
        _, reduction = comm_of()
        reduction.comms[0](torch.empty(4), torch.zeros(4 * world), dist.group.WORLD,
                           dist.ReduceOp.MAX)
    outcome("op-max", undefined_op)

    def layouts_differ():
        _, reduction = comm_of()
        s = 4 + rank  # rank 1 holds a longer shard
        reduction.comms[0](torch.empty(s), torch.zeros(s * world), dist.group.WORLD,
                           dist.ReduceOp.AVG)
    outcome("layouts-differ", layouts_differ)

    def fixed_order_accumulation():
        _, reduction = comm_of("fixed-order")
        reduction.micro_batch(last=True)
    outcome("fixed-order-accumulation", fixed_order_accumulation)

    def undefined_factor():
        _, reduction = comm_of()
        reduction.comms[0](torch.empty(4), torch.zeros(4 * world), dist.group.WORLD,
                           dist.ReduceOp.PREMUL_SUM(0.3))
    if callable(dist.ReduceOp.PREMUL_SUM):  # torch 2.13 on: a PREMUL_SUM with a factor
        outcome("premul-sum-0.3", undefined_factor)

    def divide_factor():
        # After register(), FSDP would divide our shards by 2.5 itself: refused in backward.
        model, _ = comm_of()
        model.set_gradient_divide_factor(2.5)
        model(torch.ones(2, 8)).sum().backward()
    outcome("divide-factor-2.5", divide_factor)

    def micro_batch_missed():
        model, reduction = comm_of()
        reduction.micro_batch(last=False)
        model(torch.ones(2, 8)).sum().backward()
        model(torch.ones(2, 8)).sum().backward()  # no micro_batch() before this one
    outcome("micro-batch-missed", micro_batch_missed)

    def fsdp1_accumulation():
        from torch.distributed.fsdp import FullyShardedDataParallel
        model = FullyShardedDataParallel(torch.nn.Linear(8, 8), device_id=torch.device("cpu"))
        reduce_verify.fsdp.register_fsdp1(model, contract="exact").micro_batch(last=True)
    outcome("fsdp1-accumulation", fsdp1_accumulation)

    def peer_absent():
        # Rank 1 runs no reduce-scatter: rank 0's agreement waits 2 s, then names it. Last:
        # the world is not used after it.
        model = torch.nn.Sequential(torch.nn.Linear(8, 8))
        fully_shard(model, mesh=mesh)
        reduction = reduce_verify.fsdp.register(model, contract="exact", agreement_timeout=2.0)
        if rank == 0:
            reduction.comms[0](torch.empty(4), torch.zeros(4 * world), dist.group.WORLD,
                               dist.ReduceOp.SUM)
        else:
            time.sleep(5)  # alive (its connections open) while rank 0's deadline passes
    outcome("peer-absent", peer_absent)
    return results


def contract_checks(rank, world):
    """The reduce-scatter contract of docs/DESIGN.md §2.6, on our comm called as FSDP calls it:
    each rank's shard is, bit for bit, its slice of reduce_verify.reduce over every rank's input
    (the all-reduce's bits), for f32, bf16 and f16, both contracts, AVG, SUM and PREMUL_SUM; and
    three accumulated micro-batches (one rank skipping one) give RN(sum / 5) of the 5 rows added.
    Returns {case: number of differing elements (0 expected)}; and the dtype our comm saw under
    FSDP's MixedPrecisionPolicy(reduce_dtype=bfloat16)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mesh = init_device_mesh("cpu", (world,))
    model = torch.nn.Sequential(torch.nn.Linear(8, 8))
    fully_shard(model, mesh=mesh)
    results = {}
    s = 1000  # elements a shard
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for contract in ("fixed-order", "exact"):
            ops = [("AVG", dist.ReduceOp.AVG, "mean"), ("SUM", dist.ReduceOp.SUM, "sum")]
            # A PREMUL_SUM with its factor is made by calling RedOpType from torch 2.13 on;
            # torch 2.11 has no way to make one here, so its PREMUL_SUM cases are left out.
            if callable(dist.ReduceOp.PREMUL_SUM):
                ops.append(("PREMUL_SUM(1/W)", dist.ReduceOp.PREMUL_SUM(1.0 / world), "mean"))
                if contract == "exact":
                    ops.append(("PREMUL_SUM(1/3)", dist.ReduceOp.PREMUL_SUM(1.0 / 3), "mean-3"))
            # op "sum": the SUM FSDP passes is a sum (register's default reads it as the mean).
            reduction = reduce_verify.fsdp.register(model, contract=contract, op="sum")
            for name, op, meaning in ops:
                generator = torch.Generator().manual_seed(100 + rank)
                mine = (torch.randn(world * s, generator=generator) *
                        torch.exp(4 * torch.randn(world * s, generator=generator))).to(dtype)
                every = [torch.empty_like(mine) for _ in range(world)]
                dist.all_gather(every, mine)
                out = torch.empty(s, dtype=dtype)
                reduction.comms[0](out, mine, dist.group.WORLD, op)
                table = torch.stack([t[rank * s:(rank + 1) * s] for t in every])
                if meaning == "mean-3":  # RN(sum / 3), by the exact accumulator
                    expected = _exact_mean_over(table, 3)
                else:
                    expected = reduce_verify.reduce(table, meaning, contract)
                results[f"{dtype} {contract} {name}"] = int((_bits(out) != _bits(expected)).sum())
        # Accumulation: micro-batches 0, 1, 2; rank 1 skips micro-batch 1: 2W - 1 rows.
        reduction = reduce_verify.fsdp.register(model, contract="exact")
        rows = []
        out = torch.empty(s, dtype=dtype)
        for k in range(3):
            generator = torch.Generator().manual_seed(1000 * k + rank)
            mine = torch.randn(world * s, generator=generator).to(dtype)
            contributes = not (rank == 1 and k == 1)
            every = [torch.empty_like(mine) for _ in range(world)]
            dist.all_gather(every, mine)
            rows += [t[rank * s:(rank + 1) * s] for r, t in enumerate(every)
                     if not (r == 1 and k == 1)]
            reduction.micro_batch(last=k == 2, contributes=contributes)
            reduction.comms[0](out, mine, dist.group.WORLD, dist.ReduceOp.AVG)
            if k < 2:
                results[f"{dtype} accumulation, zeros before the last"] = int((out != 0).sum())
        expected = reduce_verify.reduce(torch.stack(rows), "mean", "exact")
        results[f"{dtype} accumulation over {len(rows)} rows"] = int(
            (_bits(out) != _bits(expected)).sum())
    # FSDP's mixed precision hands our comm bfloat16.
    seen = []
    model = torch.nn.Sequential(torch.nn.Linear(8, 8))
    fully_shard(model, mesh=mesh, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                                                 reduce_dtype=torch.bfloat16))
    reduction = reduce_verify.fsdp.register(model, contract="exact")
    comm = reduction.comms[0]

    class Seen:
        def allocate(self, size, *, dtype, device):
            return comm.allocate(size, dtype=dtype, device=device)

        def __call__(self, output_tensor, input_tensor, group, op, async_op=False):
            seen.append(str(input_tensor.dtype))
            return comm(output_tensor, input_tensor, group, op, async_op)
    model.set_custom_reduce_scatter(Seen())
    model(torch.ones(2, 8)).float().sum().backward()
    results["mixed precision: dtypes our comm reduced"] = seen
    return results


def _bits(tensor):
    return tensor.view(torch.int32 if tensor.dtype == torch.float32 else torch.int16)


def _exact_mean_over(table, divisor):
    """RN(sum of the table's rows / divisor) by the exact accumulator of one process."""
    accumulator = reduce_verify.ExactGradAccumulator([torch.nn.Parameter(
        torch.zeros(table.shape[1], dtype=table.dtype))])
    parameter = accumulator._params[0][1]
    for row in table:
        parameter.grad = row.clone()
        accumulator.add()
    # reduce_together: this process alone (reduce() would combine with the other ranks).
    reduce_verify.ExactGradAccumulator.reduce_together([accumulator], mean_over=divisor)
    return parameter.grad


def main():
    global DEVICE
    folder = pathlib.Path(sys.argv[1])
    runs = json.loads(sys.argv[2])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    backend = "gloo"
    if os.environ.get("FSDP_DEVICE") == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS
        DEVICE = torch.device("cuda", rank)
        torch.cuda.set_device(DEVICE)
        backend = "nccl"
    torch.use_deterministic_algorithms(True)
    results = {}
    try:
        if world > 1 or any(run["mode"] in ("errors", "contract") for run in runs):
            dist.init_process_group(backend, init_method=f"file://{folder / 'store'}", rank=rank,
                                    world_size=world)
        for run in runs:
            if run["mode"] == "teardown":
                continue
            if run["mode"] == "errors":
                results[run["name"]] = errors(rank, world)
                continue
            if run["mode"] == "contract":
                results[run["name"]] = contract_checks(rank, world)
                continue
            try:
                results[run["name"]] = train(run, rank, world)
            except Exception as error:
                if not run["mode"].endswith("-default"):
                    raise
                # torch's own path is reported, not asserted: a failure is reported too.
                results[run["name"]] = {"failed": f"{type(error).__name__}: {error}"}
            if dist.is_initialized():
                dist.barrier()
    except Exception:
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(1)
    (folder / f"results-rank{rank}.json").write_text(json.dumps(results))
    sys.stdout.flush()
    if any(run["mode"] == "teardown" for run in runs):
        # A user's ending: the process group destroyed, then the interpreter's own exit, with
        # the models of our runs gone and theirs collected (a hang or an abort fails the test).
        if dist.is_initialized():
            dist.destroy_process_group()
        return
    # The errors' worlds may leave a backward pass's FSDP state half done: no teardown to
    # wait on, the results are written.
    os._exit(0)


if __name__ == "__main__":
    main()
