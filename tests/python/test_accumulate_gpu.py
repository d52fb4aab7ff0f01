"""Exact gradient accumulation on one GPU, in one process (docs/DESIGN.md §11): the CI test's
transformer block on CUDA, 8 micro-batches per step accumulated in three groupings and orders
(one accumulator in order; two, 4 + 4, reversed; three, uneven and shuffled), combined with
ExactGradAccumulator.reduce_together: asserted, one reduced-gradient digest per step and one
final parameter digest for the three, and a recorded step's micro-batch gradients replayed on
the CPU through `reduce-verify digest --contract exact --op mean --inputs` give that step's
digest. Exits 77 (skipped) without torch, CUDA or a CUDA build of the library.

On the H200 (torch 2.x): CUBLAS_WORKSPACE_CONFIG=:4096:8 is set here, as deterministic cuBLAS
needs it."""

import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
try:
    import torch
except ImportError:
    print("torch is not installed: skipped")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(__file__))
import accumulation_training as training  # noqa: E402
import reduce_verify  # noqa: E402

STEPS = 3
RECORDED_STEP = 1
GROUPINGS = {
    "1 in order": [list(range(8))],
    "2 reversed": [[7, 6, 5, 4], [3, 2, 1, 0]],
    "3 shuffled": [[5, 0, 3], [7, 2], [6, 1, 4]],
}
TOOL = os.environ.get("REDUCE_VERIFY", "reduce-verify")


def train(grouping, record_dir):
    torch.manual_seed(0)
    model = training.make_model().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=training.LEARNING_RATE, momentum=0.9)
    accumulators = [reduce_verify.ExactGradAccumulator(model) for _ in grouping]
    for rank, acc in enumerate(accumulators):
        acc.record_rank = rank  # one process holds every rank: name the files apart
    steps = []
    for step in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        for acc in accumulators:
            acc.record_dir = record_dir if step == RECORDED_STEP else None
        for acc, indices in zip(accumulators, grouping):
            for index in indices:
                x, y = training.micro_batch(step, index)
                logits = model(x.cuda())
                torch.nn.functional.cross_entropy(logits.reshape(-1, training.VOCAB),
                                                  y.cuda().reshape(-1)).backward()
                acc.add()
        reduce_verify.ExactGradAccumulator.reduce_together(accumulators, mean_over=8)
        steps.append(reduce_verify.digest(
            torch.cat([p.grad.reshape(-1) for p in model.parameters()])))
        optimizer.step()
    return steps, reduce_verify.digest(training.flat_parameters(model))


class GpuGroupings(unittest.TestCase):
    def test_three_groupings_give_one_digest_and_the_cli_replays_it(self):
        if not torch.cuda.is_available():
            self.skipTest("no CUDA device")
        if not reduce_verify.built_with_cuda():
            self.skipTest("libreduce_verify_c.so was built without CUDA")
        torch.use_deterministic_algorithms(True)
        with tempfile.TemporaryDirectory(prefix="rv-accumulate-gpu-") as temp:
            results = {}
            for name, grouping in GROUPINGS.items():
                record = pathlib.Path(temp) / name.replace(" ", "-")
                results[name] = train(grouping, str(record))
                print(f"{name}: steps {results[name][0]}, final {results[name][1]}",
                      file=sys.stderr)
            self.assertEqual(len({str(r) for r in results.values()}), 1, results)
            files = sorted(str(p) for p in (pathlib.Path(temp) / "3-shuffled").glob("*.f32"))
            self.assertEqual(len(files), 8)
            done = subprocess.run([TOOL, "digest", "--contract", "exact", "--op", "mean",
                                   "--inputs", *files], capture_output=True, text=True,
                                  timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(done.stdout.split()[0], results["1 in order"][0][RECORDED_STEP])


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("no CUDA device: skipped")
        sys.exit(77)
    unittest.main(verbosity=2)
