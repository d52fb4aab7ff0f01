"""The training loop and teardown of PyTorch's DDP tutorial at W = 4 under both hooks:
dist.destroy_process_group() with the DDP model alive, and a plain interpreter exit with
model and process group alive, 20 runs each (teardown_world.py). Every run must end with
every rank's exit code 0: no hang (a rank still alive after the run's deadline, killed and
named) and no abort (a rank killed by a signal, e.g. SIGABRT from "terminate called without
an active exception"). The wall time of each run is reported."""

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
RUNS = int(os.environ.get("RV_TEARDOWN_RUNS", "20"))
DEADLINE_S = 30  # per run; a run takes 1-3 s on the 2-core CI machine
HOOKS = ("fixed-order", "exact")
TEARDOWNS = ("destroy", "exit")


class Teardown(unittest.TestCase):
    def test_no_hang_and_no_abort_at_exit(self):
        with tempfile.TemporaryDirectory(prefix="rv-teardown-test-") as scratch:
            reports = {}
            started = time.monotonic()
            # Two worlds at once (eight processes on two cores): one per hook.
            for teardown in TEARDOWNS:
                running = []
                for hook in HOOKS:
                    report = pathlib.Path(scratch) / f"{hook}-{teardown}.json"
                    command = [sys.executable, WORLD, "--hook", hook, "--teardown", teardown,
                               "--world", "4", "--runs", str(RUNS), "--deadline",
                               str(DEADLINE_S), "--report", str(report)]
                    running.append((hook, report, subprocess.Popen(
                        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                        text=True)))
                for hook, report, process in running:
                    _, errors = process.communicate(timeout=RUNS * (DEADLINE_S + 5))
                    self.assertEqual(process.returncode, 0, errors)
                    reports[(hook, teardown)] = json.loads(report.read_text())
            total = time.monotonic() - started
        failures = []
        for (hook, teardown), report in reports.items():
            runs = report["runs"]
            seconds = [run["seconds"] for run in runs]
            outcomes = [run["outcome"] for run in runs]
            print(f"\n{hook} {teardown}, W = 4: {outcomes.count('ok')} of {len(runs)} ok, "
                  f"{outcomes.count('hang')} hang(s), {outcomes.count('abort')} abort(s); "
                  f"wall s per run: {' '.join(f'{s:.1f}' for s in seconds)}", file=sys.stderr)
            failures += [f"{hook} {teardown} run {i}: {run['outcome']}: {run['detail']}"
                         for i, run in enumerate(runs) if run["outcome"] != "ok"]
        print(f"[{len(reports) * RUNS} runs in {total:.0f} s]", file=sys.stderr)
        self.assertEqual(failures, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
