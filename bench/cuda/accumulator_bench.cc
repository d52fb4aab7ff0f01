// The exact gradient accumulator on a GPU (docs/DESIGN.md §11): one micro-batch's add of a
// 64 Mi-float normal gradient (256 MiB) into the device's digits, against cudaMemcpy
// device-to-device of the gradient, as bandwidth (the add moves 4 B read + 8 B read + 8 B
// written per element, the copy 4 + 4):
//   copy_fraction = add bandwidth / copy bandwidth   (target ≥ 0.8 on the H200)
// BM_AccumulatorAddKernel times the kernel alone with events; BM_AccumulatorAdd the whole
// micro-batch (CudaAccumulator::add and end_micro_batch: the kernel, the 4-byte read-back of
// the host flag and the stream's synchronisation) on the host clock against a synchronised
// copy. Four distinct micro-batches
// rotate. Also the combine's export (8 + 8 B) and the one-limb finish (8 + 4 B), for the mean
// over 8. BM_AccumulatorRows: FSDP's micro-batch, a reduce-scatter table's W rows added row
// by row against one add_rows call. Measures only; never asserts.
//   bench_cuda_exact --benchmark_filter=Accumulator --benchmark_out=FILE.json
//                    --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bench/cuda/harness.h"
#include "core/arena.h"
#include "core/cuda/accumulator/accumulator_kernel.h"
#include "core/cuda/accumulator/cuda_accumulator.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/device_info.h"
#include "core/cuda/dtype_kernel.h"
#include "core/dtype.h"

namespace rv {
namespace {

constexpr std::size_t kCount = std::size_t{64} << 20;
constexpr int kBatches = 4;

using bench::check;

// Not bench::median: of an even count (the export's 10 iterations) it takes the upper middle
// value, which keeps these counters comparable with the accumulator's results in bench/results/.
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Batches {
  std::vector<std::unique_ptr<DeviceBuffer>> gradients;
  DeviceBuffer copy_target{0, kCount * sizeof(float)};
  Batches() {
    for (int r = 0; r < kBatches; ++r) {
      gradients.push_back(std::make_unique<DeviceBuffer>(0, kCount * sizeof(float)));
      gradients.back()->upload_floats(
          generate_arena({1, Distribution::kNormal, 11}, static_cast<std::uint32_t>(r), kCount));
    }
  }
};

Batches& batches() {
  static Batches b;
  return b;
}

double copy_seconds(const Batches& b, int repeats) {
  std::vector<double> s;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    check(cudaMemcpyAsync(b.copy_target.data(), b.gradients[0]->data(), kCount * sizeof(float),
                          cudaMemcpyDeviceToDevice, nullptr),
          "copy");
    check(cudaStreamSynchronize(nullptr), "sync");
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median_of(s);
}

void counters(benchmark::State& state, double seconds, double bytes_per_element, double copy_s,
              std::size_t host_blocks) {
  const double bw = bytes_per_element * kCount / seconds;
  const double copy_bw = 8.0 * kCount / copy_s;
  state.counters["median_ms"] = seconds * 1e3;
  state.counters["copy_median_ms"] = copy_s * 1e3;
  state.counters["GBps"] = bw / 1e9;
  state.counters["copy_GBps"] = copy_bw / 1e9;
  state.counters["copy_fraction"] = bw / copy_bw;
  state.counters["host_blocks"] = static_cast<double>(host_blocks);
}

void BM_AccumulatorAdd(benchmark::State& state) {
  if (!cuda_device_present()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  Batches& b = batches();
  CudaAccumulator acc(0, kCount);
  for (int r = 0; r < kBatches; ++r) acc.add(b.gradients[r]->floats(), 0, kCount, nullptr);
  std::vector<double> s;
  int i = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    acc.add(b.gradients[i++ % kBatches]->floats(), 0, kCount, nullptr);
    acc.end_micro_batch();  // settles: the flag's read-back and the wait
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.push_back(t);
    state.SetIterationTime(t);
  }
  counters(state, median_of(s), 20.0, copy_seconds(b, 15), acc.host_blocks());
}

void BM_AccumulatorAddKernel(benchmark::State& state) {
  if (!cuda_device_present()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  Batches& b = batches();
  DeviceBuffer digits(0, kCount * 8), bottom(0, (kCount / 1024) * 4), bits(0, (kCount / 1024) * 4),
      covered(0, (kCount / 1024) * 4), residence(0, (kCount / 1024) * 4), needed(0, 4);
  digits.fill_bytes(0);
  bits.fill_bytes(0);
  covered.fill_bytes(0);
  residence.fill_bytes(0);
  needed.fill_bytes(0);
  bottom.fill_bytes(0x20);  // a bottom far above every value: the first add moves it down
  DeviceAccumulatorState st{static_cast<std::int64_t*>(digits.data()),
                            static_cast<std::int32_t*>(bottom.data()),
                            static_cast<std::int32_t*>(bits.data()),
                            static_cast<std::uint32_t*>(covered.data()),
                            static_cast<std::uint32_t*>(residence.data()),
                            static_cast<std::uint32_t*>(needed.data()),
                            kCount};
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  for (int r = 0; r < kBatches; ++r)
    launch_accumulator_add(st, b.gradients[r]->floats(), kCount, 1, 0, kCount, nullptr);
  std::vector<double> s;
  int i = 0;
  for (auto _ : state) {
    check(cudaEventRecord(start, nullptr), "record");
    launch_accumulator_add(st, b.gradients[i++ % kBatches]->floats(), kCount, 1, 0, kCount,
                           nullptr);
    check(cudaEventRecord(stop, nullptr), "record");
    check(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    s.push_back(ms / 1e3);
    state.SetIterationTime(ms / 1e3);
  }
  std::uint32_t flag = 0;
  needed.download(&flag, 4);
  counters(state, median_of(s), 20.0, copy_seconds(b, 15), flag);
}

void BM_AccumulatorExportAndFinish(benchmark::State& state) {
  if (!cuda_device_present()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  Batches& b = batches();
  CudaAccumulator acc(0, kCount);
  for (int r = 0; r < 8; ++r) acc.add(b.gradients[r % kBatches]->floats(), 0, kCount, nullptr);
  std::vector<std::int64_t> agreed(acc.agreement_size());
  acc.agreement_words(0, Op::kMean, 8, agreed.data(), nullptr);
  const std::size_t words = acc.plan(agreed.data(), 1);
  DeviceBuffer digits(0, words * 8), out(0, kCount * sizeof(float));
  std::vector<double> s;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    acc.export_digits(static_cast<std::int64_t*>(digits.data()), nullptr);
    acc.finish(static_cast<std::int64_t*>(digits.data()), Op::kMean, 8, DType::kF32, out.floats(),
               nullptr);
    check(cudaStreamSynchronize(nullptr), "sync");
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.push_back(t);
    state.SetIterationTime(t);
  }
  counters(state, median_of(s), 28.0, copy_seconds(b, 15), acc.host_blocks());
}

// A micro-batch of FSDP's accumulation (python/reduce_verify/fsdp.py): the W rows of a rank's
// reduce-scatter table (W × s, the gradients' dtype) added into its shard's accumulator and
// settled, row by row (W adds, each overlapping the last and so waiting for it) or in one
// add_rows call (one launch, one settle), on the host clock. Arguments: W, s, the dtype
// (0 f32, 1 bf16), the way (0 row by row, 1 add_rows).
void BM_AccumulatorRows(benchmark::State& state) {
  if (!cuda_device_present()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const auto world = static_cast<std::size_t>(state.range(0));
  const auto s = static_cast<std::size_t>(state.range(1));
  const DType dtype = state.range(2) == 0 ? DType::kF32 : DType::kBF16;
  const bool one_call = state.range(3) != 0;
  Batches& b = batches();
  // The table from the normal gradients (rounded to bf16 for bf16).
  const std::size_t element = dtype_bytes(dtype);
  DeviceBuffer table(0, world * s * element);
  for (std::size_t r = 0; r < world; ++r) {
    const float* source = b.gradients[r % kBatches]->floats() + (r / kBatches) * s % (kCount - s);
    if (dtype == DType::kF32) {
      check(cudaMemcpy(table.floats() + r * s, source, s * 4, cudaMemcpyDeviceToDevice), "fill");
    } else {
      launch_narrow(source, s, dtype, static_cast<unsigned char*>(table.data()) + r * s * 2,
                    nullptr);
    }
  }
  check(cudaDeviceSynchronize(), "fill");
  CudaAccumulator acc(0, s);
  const auto add = [&] {
    if (one_call) {
      acc.add_rows(table.data(), s, world, 0, s, dtype, nullptr);
    } else {
      for (std::size_t r = 0; r < world; ++r) {
        acc.add(static_cast<const unsigned char*>(table.data()) + r * s * element, 0, s, dtype,
                nullptr);
      }
    }
    acc.end_micro_batch();
  };
  for (int i = 0; i < 3; ++i) add();
  std::vector<double> seconds;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    add();
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    seconds.push_back(t);
    state.SetIterationTime(t);
  }
  state.counters["median_ms"] = median_of(seconds) * 1e3;
  state.counters["host_blocks"] = static_cast<double>(acc.host_blocks());
  state.SetLabel(std::string(to_string(dtype)) + (one_call ? " add_rows" : " row by row"));
}

void rows_arguments(benchmark::internal::Benchmark* b) {
  for (const std::int64_t world : {2, 4, 8}) {
    for (const std::int64_t s : {std::int64_t{1} << 20, std::int64_t{16} << 20}) {
      for (const std::int64_t dtype : {0, 1}) {
        for (const std::int64_t way : {0, 1}) b->Args({world, s, dtype, way});
      }
    }
  }
  b->ArgNames({"W", "s", "bf16", "one_call"});
}

BENCHMARK(BM_AccumulatorRows)
    ->Apply(rows_arguments)
    ->UseManualTime()
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AccumulatorAddKernel)->UseManualTime()->Iterations(25)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AccumulatorAdd)->UseManualTime()->Iterations(25)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AccumulatorExportAndFinish)
    ->UseManualTime()
    ->Iterations(10)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rv
