"""Every public entry point of the package through a whole user script, teardown included
(teardown_world.py): the DDP hooks (fixed_order_hook, exact_hook), a Trail wrapping
fixed_order_hook and wrapping torch's own default_hooks.allreduce_hook, a Recorder, and an
ExactGradAccumulator, each run 8 times at W = 2 and at W = 4 ending as PyTorch's DDP tutorial
ends (dist.destroy_process_group() with the DDP model alive, then the interpreter's exit), and
8 times at W = 4 ending in a plain interpreter exit with model and process group alive. Every
run must end with every rank's exit code 0: no hang (a rank still alive after the run's
deadline, killed and named) and no abort (a rank killed by a signal, e.g. SIGABRT from
"terminate called without an active exception"). The wall time of each run is reported.

RV_TEARDOWN_RUNS changes the runs per configuration (8); RV_TEARDOWN_STACKS=1 prints a hung
rank's native stacks (gdb) before it is killed."""

import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import torch  # noqa: F401
except ImportError:
    print("torch is not installed (Debian: python3-torch): skipped")
    sys.exit(77)

WORLD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "teardown_world.py")
RUNS = int(os.environ.get("RV_TEARDOWN_RUNS", "8"))
DEADLINE_S = 60  # per run: a run takes 0.5-4 s on the 2-core VM, up to 21 s at load 10
ENTRIES = ("fixed-order", "exact", "trail-fixed-order", "trail-allreduce", "recorder",
           "accumulator")
CONFIGURATIONS = ([(entry, "destroy", world) for world in (2, 4) for entry in ENTRIES]
                  + [(entry, "exit", 4) for entry in ENTRIES])
AT_ONCE = 2  # worlds running at the same time (of 2 and 4 processes, on two cores)


def run_configuration(scratch, entry, teardown, world):
    report = pathlib.Path(scratch) / f"{entry}-{teardown}-{world}.json"
    command = [sys.executable, WORLD, "--entry", entry, "--teardown", teardown,
               "--world", str(world), "--runs", str(RUNS), "--deadline", str(DEADLINE_S),
               "--report", str(report)]
    if os.environ.get("RV_TEARDOWN_STACKS"):
        command.append("--stacks")
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=RUNS * (DEADLINE_S + 150))
    if done.returncode != 0:
        return {"error": f"teardown_world.py exited {done.returncode}: {done.stderr}"}
    if os.environ.get("RV_TEARDOWN_STACKS"):
        print(done.stderr, file=sys.stderr)
    return json.loads(report.read_text())


class Teardown(unittest.TestCase):
    def test_no_entry_point_hangs_or_aborts_a_teardown(self):
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="rv-teardown-test-") as scratch, \
                concurrent.futures.ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
            running = {configuration: pool.submit(run_configuration, scratch, *configuration)
                       for configuration in CONFIGURATIONS}
            reports = {configuration: future.result()
                       for configuration, future in running.items()}
        total = time.monotonic() - started
        failures = []
        for (entry, teardown, world), report in reports.items():
            if "error" in report:
                failures.append(f"{entry} {teardown} W = {world}: {report['error']}")
                continue
            runs = report["runs"]
            seconds = [run["seconds"] for run in runs]
            outcomes = [run["outcome"] for run in runs]
            print(f"\n{entry} {teardown}, W = {world}: {outcomes.count('ok')} of {len(runs)} ok, "
                  f"{outcomes.count('hang')} hang(s), {outcomes.count('abort')} abort(s); "
                  f"wall s per run: {' '.join(f'{s:.1f}' for s in seconds)}", file=sys.stderr)
            failures += [f"{entry} {teardown} W = {world} run {i}: {run['outcome']}: "
                         f"{run['detail']}" for i, run in enumerate(runs) if run["outcome"] != "ok"]
        print(f"[{len(reports) * RUNS} runs in {total:.0f} s, torch {torch.__version__}]",
              file=sys.stderr)
        self.assertEqual(failures, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
