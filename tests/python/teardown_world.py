"""Worlds of W processes that run the training loop of PyTorch's DDP tutorial through one of the
package's public entry points and end the way a user's script ends: `destroy` calls
dist.destroy_process_group() while the DDP model is still alive and then lets the interpreter
exit; `exit` lets the interpreter exit with the model and the process group alive. As in
the tutorial, the model of `destroy` is a local of the function that calls destroy_process_group(), freed when
it returns (~Reducer then destroys the process group); the model of `exit` is a module-level
object, destroyed during the interpreter's own finalisation.

The entry points (--entry): the DDP hooks (`fixed-order`, `exact`); a Trail wrapping
fixed_order_hook (`trail-fixed-order`) and wrapping torch's own default_hooks.allreduce_hook
(`trail-allreduce`), end_step each step and close() at the end; a Recorder of step 2 under
fixed_order_hook (`recorder`); an ExactGradAccumulator over two micro-batches a step under
no_sync() (`accumulator`). Controls, without reduce_verify code in the step: DDP's own
all-reduce (`default`), and torch's default_hooks.allreduce_hook alone (`allreduce`), whose
Python callback on a Gloo worker hangs a teardown now and then by itself (docs/pytorch.md,
Teardown).

The ranks are forked from this process after it has imported torch once (each rank then is
a whole interpreter that exits through Python's normal finalisation, unlike a
multiprocessing child, which leaves through os._exit). Each run gets a deadline: a rank
still alive after it is a hang, killed and named; a rank that dies of a signal (SIGABRT:
"terminate called without an active exception") is an abort.

    teardown_world.py --entry trail-fixed-order --teardown destroy --runs 8 --report out.json"""

import argparse
import gc
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

import reduce_verify
from reduce_verify.ddp import HookState, exact_hook, fixed_order_hook, register
from reduce_verify.example import ToyModel  # the DDP tutorial's model

try:
    # Torch 2.x's DDP constructor imports torch._dynamo (800 modules, sympy among them: 1.3 s
    # of one core): imported once here, before the ranks are forked, and not in each rank.
    import torch._dynamo  # noqa: F401
except ImportError:  # torch 1.x: no dynamo, and DDP imports nothing more
    pass

HOOKS = {"fixed-order": fixed_order_hook, "exact": exact_hook}
ENTRIES = ("fixed-order", "exact", "trail-fixed-order", "trail-allreduce", "recorder",
           "accumulator", "default", "allreduce")
STEPS = 5
MICRO_BATCHES = 2  # per step, for the accumulator
_alive = []  # the model, its optimiser: alive until the interpreter's finalisation


def _backward(ddp, loss_fn, step, rank, micro_batch=0):
    generator = torch.Generator().manual_seed(1000 * step + 10 * rank + micro_batch)
    outputs = ddp(torch.randn(20, 10, generator=generator))
    loss_fn(outputs, torch.randn(20, 5, generator=generator)).backward()


def rank_main(rank, world, store, entry, teardown):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    scratch = pathlib.Path(store).parent
    torch.manual_seed(0)
    ddp = torch.nn.parallel.DistributedDataParallel(ToyModel())
    loss_fn = torch.nn.MSELoss()
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.001)
    trail = recorder = accumulator = None
    if entry in HOOKS:
        ddp.register_comm_hook(HookState(op="mean"), HOOKS[entry])
    elif entry == "trail-fixed-order":
        trail = reduce_verify.Trail(scratch / "trail.jsonl")
        ddp.register_comm_hook(HookState(op="mean"), trail.wrap(fixed_order_hook))
    elif entry == "trail-allreduce":
        trail = reduce_verify.Trail(scratch / "trail.jsonl")
        ddp.register_comm_hook(None, trail.wrap(default_hooks.allreduce_hook))
    elif entry == "recorder":
        recorder = reduce_verify.Recorder(scratch / "recording", steps=[2])
        register(ddp, fixed_order_hook, HookState(op="mean", recorder=recorder))
    elif entry == "accumulator":
        accumulator = reduce_verify.ExactGradAccumulator(ddp)
    elif entry == "allreduce":
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    for step in range(STEPS):
        optimizer.zero_grad()
        if accumulator is None:
            _backward(ddp, loss_fn, step, rank)
        else:
            for micro_batch in range(MICRO_BATCHES):
                with ddp.no_sync():  # the accumulator reduces; DDP must not
                    _backward(ddp, loss_fn, step, rank, micro_batch)
                accumulator.add()
            accumulator.reduce()
        optimizer.step()
        if trail is not None:
            trail.end_step(ddp.parameters(), optimizer)
    if trail is not None:
        trail.close()
    if recorder is not None:
        recorder.close()
    digest = reduce_verify.digest(torch.cat([p.detach().flatten() for p in ddp.parameters()]))
    print(f"rank {rank}: {digest}", flush=True)
    if teardown == "destroy":
        # The tutorial's cleanup(): the model is alive here and freed when this function
        # returns, and with it the last reference to the process group (~Reducer).
        dist.destroy_process_group()
    else:
        _alive.extend([ddp, optimizer])  # freed by the interpreter's finalisation


def start_rank(rank, world, store, entry, teardown):
    """Forks a rank; the child runs it and leaves through the interpreter's normal exit."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            rank_main(rank, world, store, entry, teardown)
        except BaseException as error:  # noqa: B902 - reported, then the exit code says it
            print(f"rank {rank}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
            code = 1
        sys.exit(code)  # SystemExit: atexit handlers, module teardown, C++ static destructors
    return pid


def hung_stacks(pid, rank):
    """Every thread's native stack of a hung rank (gdb), which names where it waits."""
    if shutil.which("gdb") is None:
        return f"rank {rank}: no gdb to show its stacks"
    shown = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                           capture_output=True, text=True, timeout=120)
    return f"rank {rank} (pid {pid}), every thread's stack:\n{shown.stdout}"


def one_run(world, entry, teardown, deadline, stacks=False):
    """One world; returns {"seconds", "outcome": ok|hang|abort|error, "detail"}."""
    # No `with` or `finally` around the fork: a child's SystemExit unwinds through these
    # frames, and must not run the parent's clean-up (the parent removes the folder).
    scratch = tempfile.mkdtemp(prefix="rv-teardown-")
    store = pathlib.Path(scratch) / "store"
    started = time.monotonic()
    pids = {start_rank(r, world, str(store), entry, teardown): r for r in range(world)}
    statuses = {}
    while pids.keys() - statuses.keys() and time.monotonic() - started < deadline:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            time.sleep(0.01)
        elif pid in pids:
            statuses[pid] = status
    seconds = time.monotonic() - started
    hung = sorted(pids[p] for p in pids.keys() - statuses.keys())
    for pid in pids.keys() - statuses.keys():
        if stacks:
            print(hung_stacks(pid, pids[pid]), file=sys.stderr, flush=True)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    shutil.rmtree(scratch, ignore_errors=True)
    if hung:
        return {"seconds": seconds, "outcome": "hang",
                "detail": f"rank(s) {hung} still running after the {deadline:.0f} s deadline"}
    signals = {pids[p]: signal.Signals(os.WTERMSIG(s)).name
               for p, s in statuses.items() if os.WIFSIGNALED(s)}
    if signals:
        return {"seconds": seconds, "outcome": "abort", "detail": f"killed by {signals}"}
    codes = {pids[p]: os.WEXITSTATUS(s) for p, s in statuses.items() if os.WEXITSTATUS(s)}
    if codes:
        return {"seconds": seconds, "outcome": "error", "detail": f"exit codes {codes}"}
    return {"seconds": seconds, "outcome": "ok", "detail": ""}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entry", choices=ENTRIES, required=True)
    parser.add_argument("--teardown", choices=("destroy", "exit"), required=True)
    parser.add_argument("--world", type=int, default=4)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--deadline", type=float, default=20.0, help="seconds per run")
    parser.add_argument("--report", required=True)
    parser.add_argument("--no-freeze", action="store_true",
                        help="let the ranks' collections walk the heap they inherit")
    parser.add_argument("--stacks", action="store_true",
                        help="print a hung rank's native stacks (gdb) before killing it")
    args = parser.parse_args()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    if not args.no_freeze:
        # The ranks' interpreters inherit this one's heap; every collection in a rank (its
        # finalisation runs several) would write each inherited object's GC header and so copy
        # every page of it, a cost of forking (2-3x a run's time) that a user's own
        # interpreter does not pay. Frozen, the collector leaves them alone.
        gc.freeze()
    runs = []
    for index in range(args.runs):
        run = one_run(args.world, args.entry, args.teardown, args.deadline, args.stacks)
        print(f"{args.entry} {args.teardown} W={args.world} run {index}: {run['outcome']} "
              f"{run['seconds']:.2f} s {run['detail']}", file=sys.stderr, flush=True)
        runs.append(run)
    pathlib.Path(args.report).write_text(json.dumps(
        {"entry": args.entry, "teardown": args.teardown, "world": args.world, "runs": runs}))


if __name__ == "__main__":
    main()
