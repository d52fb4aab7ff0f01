"""reduce_verify.fsdp and clip_grad_norm_ on CUDA tensors (label gpu: exits 77, skipped, without
a GPU, without FSDP2 or with a library built without CUDA).

One GPU, an NCCL world of one process: the reduce-scatter comm, called as FSDP calls it, on CUDA
tensors (the all-to-all over NCCL, the CUDA stacked kernels, the device accumulator) gives the
bits the CPU gives for the same inputs — f32, bf16, f16; fixed-order and exact; AVG, SUM,
PREMUL_SUM(1/3); an accumulation of 3 micro-batches — and clip_grad_norm_ returns the CPU's
norm and scales alike. (FSDP2 itself calls no reduce-scatter in a world of one, so the comm is
called directly here; register refuses a one-rank mesh.)

Two GPUs or more: fsdp_training.py's model over NCCL, one rank a GPU: one process 1 x 8 on GPU
0, DDP 2 x 4 (ExactGradAccumulator) and FSDP2 2 x 4 with ours, and with 4 GPUs FSDP2 4 x 2 and
3 + 2 + 2 + 1: one final parameter digest (the GPU's, not the CPU's: the model's kernels differ).
torch's own paths over the same splits are reported, not asserted."""

import json
import os
import pathlib
import sys
import tempfile
import time
import unittest

try:
    import torch
    from torch.distributed.fsdp import FSDPModule
    if not hasattr(FSDPModule, "set_custom_reduce_scatter"):
        raise ImportError("FSDPModule has no set_custom_reduce_scatter")
except Exception as missing:
    version = getattr(sys.modules.get("torch"), "__version__", "none")
    print(f"{missing}: skipped (needs FSDP2 with FSDPModule.set_custom_reduce_scatter, "
          f"torch 2.11 or 2.13; this is torch {version})")
    sys.exit(77)
if not torch.cuda.is_available():
    print("no CUDA device: skipped")
    sys.exit(77)

import torch.distributed as dist  # noqa: E402

import reduce_verify  # noqa: E402
from reduce_verify import fsdp  # noqa: E402

if not reduce_verify.built_with_cuda():
    print(f"libreduce_verify_c.so built without CUDA: skipped ({reduce_verify.library_info()})")
    sys.exit(77)

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_fsdp import finish_world, start_world  # noqa: E402

DEADLINE = 300


def bits(tensor):
    return tensor.view(torch.int32 if tensor.dtype == torch.float32 else torch.int16).cpu()


class OneGpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory(prefix="rv-fsdp-gpu-")
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.cuda.set_device(0)
        dist.init_process_group("nccl", init_method=f"file://{cls.temp.name}/store", rank=0,
                                world_size=1)

    @classmethod
    def tearDownClass(cls):
        dist.destroy_process_group()
        cls.temp.cleanup()

    def comm(self, contract, op="sum"):
        return fsdp.ReduceScatter(contract, "gpu check", fsdp.FSDPReduction(contract, 60.0), op)

    def test_the_comm_gives_the_cpus_bits(self):
        s = 300_001
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            generator = torch.Generator().manual_seed(7)
            values = (torch.randn(s, generator=generator) *
                      torch.exp(4 * torch.randn(s, generator=generator))).to(dtype)
            for contract in ("fixed-order", "exact"):
                ops = [dist.ReduceOp.AVG, dist.ReduceOp.SUM]
                # PREMUL_SUM with a factor is a callable RedOpType from torch 2.13 on; torch
                # 2.11 has none to construct here (FSDP makes its own, which parse_op reads).
                if contract == "exact" and callable(dist.ReduceOp.PREMUL_SUM):
                    ops.append(dist.ReduceOp.PREMUL_SUM(1.0 / 3))
                for op in ops:
                    out = {}
                    for device in ("cpu", "cuda"):
                        if device == "cpu":
                            # The CPU reference: the same comm over a Gloo-free path, W = 1.
                            table = values.view(1, s)
                            if op == dist.ReduceOp.SUM:
                                out[device] = reduce_verify.reduce(table, "sum", contract)
                            elif op == dist.ReduceOp.AVG:
                                out[device] = reduce_verify.reduce(table, "mean", contract)
                            else:
                                acc = reduce_verify.ExactGradAccumulator(
                                    [torch.nn.Parameter(torch.zeros(s, dtype=dtype))])
                                acc._params[0][1].grad = values.clone()
                                acc.add()
                                reduce_verify.ExactGradAccumulator.reduce_together(
                                    [acc], mean_over=3)
                                out[device] = acc._params[0][1].grad
                            continue
                        result = torch.empty(s, dtype=dtype, device="cuda")
                        self.comm(contract)(result, values.cuda(), dist.group.WORLD, op)
                        torch.cuda.synchronize()
                        out[device] = result
                    self.assertTrue(torch.equal(bits(out["cpu"]), bits(out["cuda"])),
                                    f"{dtype} {contract} {op}")

    def test_accumulation_on_the_gpu(self):
        s = 100_003
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            comm = self.comm("exact", "mean")
            reduction = comm._reduction
            rows = []
            result = torch.empty(s, dtype=dtype, device="cuda")
            for k in range(3):
                row = torch.randn(s, generator=torch.Generator().manual_seed(k)).to(dtype)
                rows.append(row)
                reduction.micro_batch(last=k == 2)
                comm(result, row.cuda(), dist.group.WORLD, dist.ReduceOp.SUM)
            torch.cuda.synchronize()
            expected = reduce_verify.reduce(torch.stack(rows), "mean", "exact")
            self.assertTrue(torch.equal(bits(expected), bits(result)), str(dtype))

    def test_clip_on_the_gpu(self):
        generator = torch.Generator().manual_seed(3)
        grads = [torch.randn(n, generator=generator) for n in (1000, 77, 65_536)]
        for norm_type in (2.0, 1.0, float("inf")):
            norms, scaled = {}, {}
            for device in ("cpu", "cuda"):
                parameters = []
                for g in grads:
                    p = torch.nn.Parameter(torch.zeros_like(g, device=device))
                    p.grad = g.to(device).clone()
                    parameters.append(p)
                norms[device] = reduce_verify.clip_grad_norm_(parameters, 1.0, norm_type)
                scaled[device] = torch.cat([p.grad.reshape(-1).cpu() for p in parameters])
            self.assertEqual(bits(norms["cpu"].reshape(1)).tolist(),
                             bits(norms["cuda"].reshape(1)).tolist(), norm_type)
            self.assertTrue(torch.equal(bits(scaled["cpu"]), bits(scaled["cuda"])), norm_type)


@unittest.skipIf(torch.cuda.device_count() < 2, "needs 2 GPUs")
class ManyGpus(unittest.TestCase):
    def test_one_digest_over_nccl(self):
        gpus = torch.cuda.device_count()
        worlds = {1: [{"name": "single 1x8", "mode": "single"},
                      {"name": "single 1x8 default", "mode": "single-default"}],
                  2: [{"name": "ddp 2x4", "mode": "ddp"}, {"name": "fsdp 2x4", "mode": "fsdp"},
                      {"name": "ddp 2x4 default", "mode": "ddp-default"},
                      {"name": "fsdp 2x4 default", "mode": "fsdp-default"}]}
        if gpus >= 4:
            worlds[4] = [{"name": "fsdp 4x2", "mode": "fsdp"},
                         {"name": "fsdp 3+2+2+1", "mode": "fsdp", "split": [3, 2, 2, 1]},
                         {"name": "fsdp 4x2 default", "mode": "fsdp-default"}]
        ours, theirs = {}, {}
        with tempfile.TemporaryDirectory(prefix="rv-fsdp-gpus-") as temp:
            os.environ["FSDP_DEVICE"] = "cuda"
            try:
                for world, runs in worlds.items():
                    folder = pathlib.Path(temp) / f"w{world}"
                    begun = time.monotonic()
                    ranks = start_world(world, runs, folder)
                    results = finish_world(world, ranks, folder, time.monotonic() + DEADLINE)
                    print(f"[W = {world}: {time.monotonic() - begun:.1f} s]", file=sys.stderr)
                    for run in runs:
                        seen = {json.dumps(r[run["name"]].get("digest") or
                                           r[run["name"]].get("failed")) for r in results}
                        into = theirs if run["mode"].endswith("-default") else ours
                        into[run["name"]] = " / ".join(sorted(seen))
            finally:
                del os.environ["FSDP_DEVICE"]
        print(f"\nours over NCCL: {len(set(ours.values()))} distinct of {len(ours)}: {ours}\n"
              f"torch's own paths (reported): {len(set(theirs.values()))} distinct of "
              f"{len(theirs)}: {theirs}", file=sys.stderr)
        self.assertEqual(len(set(ours.values())), 1, ours)


if __name__ == "__main__":
    unittest.main()
