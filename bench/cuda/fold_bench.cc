// The fold kernel against cudaMemcpy device-to-device, measured in the same run on the same
// device: W stacked slots of 256 MiB each. Both are timed with CUDA events, alternately in
// each iteration (so both see the same clocks), after a warm-up, each enqueued while the
// device is still busy with the work before it (no launch gaps in the timings); the
// counters are medians.
//   fold traffic: W slots read + 1 written = (W + 1) × 256 MiB
//   copy traffic: the same W slots read + written elsewhere = 2 × W × 256 MiB
//   copy_fraction = fold bandwidth / copy bandwidth (target ≥ 0.95 on the H200)
// Shapes: every detail::FoldShape on the aligned layout (the vector path), and the default
// shape on a stride of 256 MiB + 1 element (the scalar path the live reducers take when
// slots are not 16-byte aligned).
//
// Run: bench_cuda --benchmark_out=FILE.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/device_info.h"
#include "core/cuda/fold_kernel.h"
#include "core/cuda/nccl_library.h"

namespace rv {
namespace {

constexpr std::size_t kSlotBytes = std::size_t{256} << 20;
constexpr std::size_t kSlotFloats = kSlotBytes / sizeof(float);
constexpr int kWarmup = 3;
constexpr int kIterations = 25;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// One slot of gradient-like values, made once: timing on zeros could flatter the kernel.
const std::vector<float>& slot_values() {
  static const std::vector<float> values =
      generate_arena(ArenaSpec{kLatestGenerator, Distribution::kNormal, 42}, 0, kSlotFloats);
  return values;
}

void BM_FoldVsCopy(benchmark::State& state) {
  const auto world = static_cast<std::uint32_t>(state.range(0));
  const auto shape = detail::kAllFoldShapes[state.range(1)];
  const bool aligned = state.range(2) == 0;
  const std::size_t stride = aligned ? kSlotFloats : kSlotFloats + 1;
  const std::size_t table_floats = (world - 1) * stride + kSlotFloats;

  // The table (W slots, `stride` floats apart), the fold's output (one slot) and the
  // copy's destination (the table's size).
  const DeviceBuffer table(0, table_floats * sizeof(float));
  const DeviceBuffer out(0, kSlotBytes);
  const DeviceBuffer copy_target(0, table_floats * sizeof(float));
  check(cudaMemcpy(table.data(), slot_values().data(), kSlotBytes, cudaMemcpyHostToDevice),
        "upload");
  for (std::uint32_t r = 1; r < world; ++r) {
    check(
        cudaMemcpy(table.floats() + r * stride, table.data(), kSlotBytes, cudaMemcpyDeviceToDevice),
        "fill");
  }
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaEvent_t start, folded, copied;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&folded), "event");
  check(cudaEventCreate(&copied), "event");

  const auto fold = [&] {
    detail::launch_fold_stacked_shaped(table.floats(), world, stride, kSlotFloats, Op::kMean,
                                       out.floats(), stream, shape);
  };
  const auto copy = [&] {
    check(cudaMemcpyAsync(copy_target.data(), table.data(), table_floats * sizeof(float),
                          cudaMemcpyDeviceToDevice, stream),
          "copy");
  };
  for (int i = 0; i < kWarmup; ++i) {
    fold();
    copy();
  }
  check(cudaStreamSynchronize(stream), "warm-up");

  std::vector<double> fold_ms, copy_ms;
  for (auto _ : state) {
    // A lead-in copy keeps the stream busy while the timed fold and copy are enqueued: an
    // event recorded on an idle stream would count the host's launch latency as device time.
    copy();
    check(cudaEventRecord(start, stream), "record");
    fold();
    check(cudaEventRecord(folded, stream), "record");
    copy();
    check(cudaEventRecord(copied, stream), "record");
    check(cudaEventSynchronize(copied), "sync");
    float f = 0, c = 0;
    check(cudaEventElapsedTime(&f, start, folded), "elapsed");
    check(cudaEventElapsedTime(&c, folded, copied), "elapsed");
    fold_ms.push_back(f);
    copy_ms.push_back(c);
    state.SetIterationTime(f / 1e3);
  }
  check(cudaGetLastError(), "kernel");

  const double fold_bytes = static_cast<double>(world + 1) * kSlotBytes;
  const double copy_bytes = 2.0 * static_cast<double>(table_floats) * sizeof(float);
  const double fold_bw = fold_bytes / (median(fold_ms) / 1e3);
  const double copy_bw = copy_bytes / (median(copy_ms) / 1e3);
  state.SetBytesProcessed(static_cast<std::int64_t>(fold_bytes) * state.iterations());
  state.counters["fold_GBps"] = fold_bw / 1e9;
  state.counters["copy_GBps"] = copy_bw / 1e9;
  state.counters["copy_fraction"] = fold_bw / copy_bw;
  state.counters["fold_median_ms"] = median(fold_ms);
  state.counters["copy_median_ms"] = median(copy_ms);
  state.SetLabel(std::string(detail::to_string(shape)) + (aligned ? " vector" : " scalar") +
                 (shape == detail::default_fold_shape() ? " (default)" : ""));

  cudaEventDestroy(start);
  cudaEventDestroy(folded);
  cudaEventDestroy(copied);
  cudaStreamDestroy(stream);
}

void fold_arguments(benchmark::internal::Benchmark* b) {
  const auto shapes = static_cast<std::int64_t>(std::size(detail::kAllFoldShapes));
  std::int64_t default_index = 0;
  for (std::int64_t s = 0; s < shapes; ++s) {
    if (detail::kAllFoldShapes[s] == detail::default_fold_shape()) default_index = s;
  }
  for (std::int64_t world : {2, 4, 8, 16}) {
    for (std::int64_t s = 0; s < shapes; ++s) b->Args({world, s, 0});
    b->Args({world, default_index, 1});
  }
  b->ArgNames({"W", "shape", "misaligned"});
}

BENCHMARK(BM_FoldVsCopy)
    ->Apply(fold_arguments)
    ->UseManualTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);

void add_context() {
  const CudaInfo info = cuda_info();
  benchmark::AddCustomContext("cuda_driver", cuda_version_text(info.driver_version));
  benchmark::AddCustomContext("cuda_runtime", cuda_version_text(info.runtime_version));
  if (!info.gpus.empty()) {
    benchmark::AddCustomContext("gpu", describe(info.gpus[0]));
    benchmark::AddCustomContext("gpu_pci_bus_id", info.gpus[0].pci_bus_id);
  }
  benchmark::AddCustomContext("nvidia_driver", info.driver_release);
  try {
    benchmark::AddCustomContext("nccl", NcclLibrary::load().describe());
  } catch (const std::exception& e) {
    benchmark::AddCustomContext("nccl", std::string("not loaded: ") + e.what());
  }
  benchmark::AddCustomContext("fold_default_shape",
                              detail::to_string(detail::default_fold_shape()));
  benchmark::AddCustomContext("slot_bytes", std::to_string(kSlotBytes));
}

}  // namespace
}  // namespace rv

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!rv::cuda_device_present()) {
    std::printf("bench_cuda: no CUDA device (%s); nothing to measure\n",
                rv::cuda_info().status.c_str());
    return 0;
  }
  rv::add_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
