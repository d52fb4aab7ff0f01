#!/usr/bin/env python3
"""A W = 4 Gloo world with a stranger on every rank's port (docs/DESIGN.md §10).

  stranger_world_test.py REDUCE_VERIFY

1. A quiet supervised run (`run --transport gloo --world 4`, a handful of cases) gives the
   digests.
2. Supervised runs with the stranger (stranger.py) attacking the ports of the supervisor's
   children from their start: each must exit 0 with the quiet run's digests.
3. A staged world of four ranks under our launcher variables: the harness stops rank 3
   (SIGSTOP) as soon as any rank listens, so that ranks 0..2 sit listening for rank 3
   while the stranger attacks them for a while; then rank 3 continues. Every rank must exit 0, rank 0 must print
   the quiet digests, and the ranks must have logged the connections they refused (so the
   attack reached their listeners, not a closed port).
Exit 0 when all hold; the numbers (connections, ports, refusals, times) go to stdout.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stranger import Stranger, children_of, listening_ports  # noqa: E402

CASES = [
    "contract=fixed-order,op=sum,w=4,n=1000,dist=normal,seed=1,gen=1",
    "contract=fixed-order,op=mean,w=4,n=77777,dist=normal,seed=2,gen=1",
    "contract=fixed-order,op=sum,w=4,n=3,dist=normal,seed=3,gen=1",
    "contract=fixed-order,op=sum,w=4,n=5000,dist=normal,seed=4,gen=1",
    "contract=fixed-order,op=mean,w=4,n=100000,dist=normal,seed=5,gen=1",
]  # `run` checks each under every contract: fixed-order and exact digests are compared
SUPERVISED_RUNS = 3
STAGED_TRIES = 4
ATTACK_SECONDS = 1.5


def case_arguments():
    args = []
    for case in CASES:
        args += ["--case", case]
    return args


def digests(stdout):
    """{case id: digest} of the fixed-order and exact lines a run printed."""
    found = {}
    for line in stdout.splitlines():
        m = re.match(r"^(contract=(?:fixed-order|exact),\S+): OK ([0-9a-f]{32})$", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def fail(why, *outputs):
    print("stranger_world_test: FAILED: " + why)
    for text in outputs:
        print(text)
    sys.exit(1)


def supervised(binary, stranger_on):
    proc = subprocess.Popen([binary, "run", "--transport", "gloo", "--world", "4", "--timeout",
                             "30"] + case_arguments(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stranger = None
    if stranger_on:
        stranger = Stranger(lambda: children_of(proc.pid))
        stranger.start()
    out, err = proc.communicate(timeout=120)
    if stranger:
        stranger.stop()
    return proc.returncode, out, err, stranger


def staged(binary, root, attempt):
    """Ranks 0..3 under our launcher variables; rank 3 stopped while the others listen. Returns
    (rank 0's stdout, every rank's stderr, stranger, whether the window was caught)."""
    procs = []
    for rank in range(4):
        env = dict(os.environ, REDUCE_VERIFY_RANK=str(rank), REDUCE_VERIFY_WORLD_SIZE="4")
        procs.append(subprocess.Popen(
            [binary, "run", "--transport", "gloo", "--rendezvous", root, "--job-id",
             f"staged-{attempt}", "--hostname", "127.0.0.1", "--timeout", "30"] +
            case_arguments(), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True))
    pids = [p.pid for p in procs]
    stranger = Stranger(lambda: pids[:3])
    stranger.start()
    caught = False
    give_up = time.monotonic() + 20
    while time.monotonic() < give_up and procs[3].poll() is None:
        if listening_ports(pids):
            os.kill(pids[3], signal.SIGSTOP)
            # Ranks 0..2 listen from before they arrive until rank 3 has dialled them: if it
            # has not, they are (or soon will be) waiting for it.
            settle = time.monotonic() + 2
            while not caught and time.monotonic() < settle:
                caught = len(listening_ports(pids[:3])) >= 3
                time.sleep(0.01)
            break
        time.sleep(0.0005)
    if caught:
        time.sleep(ATTACK_SECONDS)
    try:
        os.kill(pids[3], signal.SIGCONT)
    except ProcessLookupError:
        pass
    outputs = [p.communicate(timeout=120) for p in procs]
    stranger.stop()
    for rank, p in enumerate(procs):
        if p.returncode != 0:
            fail(f"staged rank {rank} exited {p.returncode} with the stranger on its port",
                 *[o[1] for o in outputs])
    return outputs[0][0], "".join(o[1] for o in outputs), stranger, caught


def refusals(stderr):
    return sum(int(n) for n in re.findall(r"refused (\d+) connections? that did not prove", stderr))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    start = time.monotonic()
    rc, out, err, _ = supervised(binary, False)
    quiet = digests(out)
    if rc != 0 or len(quiet) != 2 * len(CASES):
        fail(f"the quiet run exited {rc} with {len(quiet)} digests", out, err)
    print(f"quiet run: {len(quiet)} digests, {time.monotonic() - start:.1f} s")

    for run in range(SUPERVISED_RUNS):
        t = time.monotonic()
        rc, out, err, stranger = supervised(binary, True)
        if rc != 0 or digests(out) != quiet:
            fail(f"supervised run {run} with the stranger exited {rc} or changed digests", out,
                 err)
        print(f"supervised run {run}: OK, {stranger.connected} stranger connections to "
              f"{len(stranger.ports_seen)} ports, {refusals(err)} refused by the ranks, "
              f"{time.monotonic() - t:.1f} s")

    with tempfile.TemporaryDirectory(prefix="rv-stranger-") as root:
        for attempt in range(STAGED_TRIES):
            t = time.monotonic()
            out, err, stranger, caught = staged(binary, root, attempt)
            if digests(out) != quiet:
                fail(f"the staged world {attempt} changed digests", out, err)
            refused = refusals(err)
            print(f"staged world {attempt}: OK, rank 3 {'stopped while ranks 0-2 listened' if caught else 'connected before it could be stopped'}, "
                  f"{stranger.connected} stranger connections, {refused} refused by the ranks, "
                  f"{time.monotonic() - t:.1f} s")
            if caught:
                if refused == 0:
                    fail("the ranks refused no connection: the attack never reached a listener",
                         err)
                break
        else:
            fail(f"rank 3 was never caught listening in {STAGED_TRIES} tries")
    print(f"stranger_world_test: OK in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
