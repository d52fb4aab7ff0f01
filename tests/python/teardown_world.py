"""Worlds of W processes that run the training loop of PyTorch's DDP tutorial with a
reduce_verify hook and end the way a user's script ends: `destroy` calls
dist.destroy_process_group() while the DDP model is still alive and then lets the interpreter
exit; `exit` lets the interpreter exit with the model and the process group alive. As in
the tutorial, the model of `destroy` is a local of the function that calls destroy_process_group(), freed when
it returns (~Reducer then destroys the process group); the model of `exit` is a module-level
object, destroyed during the interpreter's own finalisation.

The ranks are forked from this process after it has imported torch once (each rank then is
a whole interpreter that exits through Python's normal finalisation, unlike a
multiprocessing child, which leaves through os._exit). Each run gets a deadline: a rank
still alive after it is a hang, killed and named; a rank that dies of a signal (SIGABRT:
"terminate called without an active exception") is an abort.

    teardown_world.py --hook fixed-order --teardown destroy --runs 20 --report out.json"""

import argparse
import json
import os
import pathlib
import shutil
import signal
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import reduce_verify
from reduce_verify.ddp import HookState, exact_hook, fixed_order_hook
from reduce_verify.example import ToyModel  # the DDP tutorial's model

HOOKS = {"fixed-order": fixed_order_hook, "exact": exact_hook}
STEPS = 5
_alive = []  # the model, its optimiser: alive until the interpreter's finalisation




def rank_main(rank, world, store, hook, teardown):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    torch.manual_seed(0)
    ddp = torch.nn.parallel.DistributedDataParallel(ToyModel())
    if hook != "default":  # DDP's own all-reduce: the control
        ddp.register_comm_hook(HookState(op="mean"), HOOKS[hook])
    loss_fn = torch.nn.MSELoss()
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.001)
    for step in range(STEPS):
        generator = torch.Generator().manual_seed(1000 * step + rank)
        optimizer.zero_grad()
        outputs = ddp(torch.randn(20, 10, generator=generator))
        loss_fn(outputs, torch.randn(20, 5, generator=generator)).backward()
        optimizer.step()
    digest = reduce_verify.digest(torch.cat([p.detach().flatten() for p in ddp.parameters()]))
    print(f"rank {rank}: {digest}", flush=True)
    if teardown == "destroy":
        # The tutorial's cleanup(): the model is alive here and freed when this function
        # returns, and with it the last reference to the process group (~Reducer).
        dist.destroy_process_group()
    else:
        _alive.extend([ddp, optimizer])  # freed by the interpreter's finalisation


def start_rank(rank, world, store, hook, teardown):
    """Forks a rank; the child runs it and leaves through the interpreter's normal exit."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            rank_main(rank, world, store, hook, teardown)
        except BaseException as error:  # noqa: B902 - reported, then the exit code says it
            print(f"rank {rank}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
            code = 1
        sys.exit(code)  # SystemExit: atexit handlers, module teardown, C++ static destructors
    return pid


def one_run(world, hook, teardown, deadline):
    """One world; returns {"seconds", "outcome": ok|hang|abort|error, "detail"}."""
    # No `with` or `finally` around the fork: a child's SystemExit unwinds through these
    # frames, and must not run the parent's clean-up (the parent removes the folder).
    scratch = tempfile.mkdtemp(prefix="rv-teardown-")
    store = pathlib.Path(scratch) / "store"
    started = time.monotonic()
    pids = {start_rank(r, world, str(store), hook, teardown): r for r in range(world)}
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
    parser.add_argument("--hook", choices=sorted(HOOKS) + ["default"], required=True)
    parser.add_argument("--teardown", choices=("destroy", "exit"), required=True)
    parser.add_argument("--world", type=int, default=4)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--deadline", type=float, default=20.0, help="seconds per run")
    parser.add_argument("--report", required=True)
    args = parser.parse_args()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    runs = []
    for index in range(args.runs):
        run = one_run(args.world, args.hook, args.teardown, args.deadline)
        print(f"{args.hook} {args.teardown} run {index}: {run['outcome']} "
              f"{run['seconds']:.2f} s {run['detail']}", file=sys.stderr, flush=True)
        runs.append(run)
    pathlib.Path(args.report).write_text(json.dumps(
        {"hook": args.hook, "teardown": args.teardown, "world": args.world, "runs": runs}))


if __name__ == "__main__":
    main()
