"""Waiting for a world of rank processes that a test started (each writing rank<r>.log and
results-rank<r>.json into its folder): every rank must exit 0 before the deadline, or the test
fails naming the late or failed ranks with the end of their logs; a late rank is killed, so no
process outlives the test."""

import json
import subprocess
import time


def finish_world(world, ranks, folder, deadline, limit, tail=30):
    """ranks: (Popen, open log file) per rank; deadline: a time.monotonic() value; limit: the
    seconds the deadline allowed (for the message). Returns each rank's results, in rank order."""
    late = []
    for rank, (process, _) in enumerate(ranks):
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            late.append(rank)
    for process, log in ranks:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()

    def logs():
        return "\n".join(f"--- rank {r} (exit {p.returncode}), last lines:\n" +
                         "\n".join((folder / f"rank{r}.log").read_text().splitlines()[-tail:])
                         for r, (p, _) in enumerate(ranks))
    if late:
        raise AssertionError(f"world of {world}: rank(s) {late} did not exit within {limit} s "
                             f"(killed)\n{logs()}")
    failed = [r for r, (p, _) in enumerate(ranks) if p.returncode != 0]
    if failed:
        raise AssertionError(f"world of {world}: rank(s) {failed} failed\n{logs()}")
    return [json.loads((folder / f"results-rank{r}.json").read_text()) for r in range(world)]
