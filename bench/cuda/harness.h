// What the CUDA benchmark programs share (nccl-tests' common.cu is the model): the timing
// constants, a CUDA status check and the median; the one kernel-against-copy timer; and the
// body of every program's main (arguments, the no-device exit, the context every result
// carries). Each program keeps its own benchmarks and its own context; bench_nccl, several
// processes with its own JSON, has a main of its own.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rv::bench {

// Warm-up launches, then timed iterations whose median is reported.
constexpr int kWarmup = 3;
constexpr int kIterations = 25;

// A benchmark's own CUDA call failed: nothing it measured would mean anything.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// The copy a kernel is measured against: `bytes` from `source` to `target`, device to device
// (read + written, 2 × bytes of traffic). It is the ceiling, so it always moves aligned buffers.
struct DeviceCopy {
  void* target;
  const void* source;
  std::size_t bytes;
};

// The names of the kernel's two counters: committed results (bench/results/) use both
// "kernel_…" and, for the fold, "fold_…".
struct KernelCounters {
  const char* gbps = "kernel_GBps";
  const char* median_ms = "kernel_median_ms";
};

// Times `kernel` (moving `kernel_bytes`, read + written) against `copy` on `stream`, both with
// CUDA events, alternately in each iteration so that both see the same clocks, after kWarmup
// launches of each; a lead-in copy keeps the stream busy while the timed work is enqueued.
// Under --flush_l2 (any program run through run_cuda_benchmarks) an L2 flush (l2_flush.h)
// precedes each timed kernel and copy, untimed, in place of the lead-in copy.
// The iteration time is the kernel's; the counters are medians: <gbps>, copy_GBps,
// copy_fraction (kernel bandwidth / copy bandwidth), <median_ms>, copy_median_ms, and the
// bytes processed are the kernel's. Returns copy_fraction.
double time_kernel_against_copy(benchmark::State& state, cudaStream_t stream,
                                const std::function<void()>& kernel, double kernel_bytes,
                                const DeviceCopy& copy, const KernelCounters& counters = {});

// Whether this run flushes the L2 between timed operations (--flush_l2).
bool l2_flush_on();

// The whole of a CUDA benchmark program's main: --flush_l2, then Google Benchmark's arguments
// (unknown ones: 1), no CUDA device: "<program>: no CUDA device (…); nothing to measure" and 0;
// otherwise the context every program records (CUDA driver and runtime, GPU, PCI bus id, NVIDIA
// driver, NCCL when it loads, the L2 flush or none), then `extra_context` (the program's own), the
// benchmarks, then `after` (e.g. a summary) before Shutdown.
int run_cuda_benchmarks(int argc, char** argv, const char* program,
                        const std::function<void()>& extra_context,
                        const std::function<void()>& after = {});

}  // namespace rv::bench
