// How much of the loopback world's folding hides under its copies when the shards move in
// pieces (core/cuda/loopback_pipeline.h): W logical ranks' arenas of 16 or 256 MiB on one GPU,
// reduced in 1 (no overlap possible), 2, 4 or 8 pieces. Each iteration times, on the fold
// stream with CUDA events, one after the other (so all three see the same clocks):
//   reduce_ms  the reduction (copies and folds, pipelined when pieces > 1)
//   copies_ms  the same enqueue with the folds left out (scatter and all-gather copies)
//   folds_ms   the same enqueue with the copies left out (the folds of every piece)
// and the counters are medians:
//   serial_ms      copies_ms + folds_ms: what the reduction would take with no overlap
//   hidden_fraction  (serial_ms − reduce_ms) / folds_ms: the share of the fold time that ran
//                  under the copies (1: all of it; 0 or less: none)
//   enqueue_ms     the host's time to enqueue the reduction (W² copies per piece, twice):
//                  when it nears reduce_ms, the GPU waited for the host
//   traffic_GBps   bytes the reduction reads and writes, 4n(5W + 1) (scatter 2Wn, fold
//                  (W + 1)n, all-gather 2Wn floats), over reduce_ms
// Both the copies and the folds are bound by the same memory, so the overlap can only hide
// the gaps (launches, a piece's tail, the copy engines' idle time), not the traffic itself.
// A lead-in memset keeps the fold stream busy while each timed enqueue is issued.
//
// Run: bench_cuda --benchmark_filter=BM_LoopbackOverlap --benchmark_out=FILE.json
//      --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/loopback_pipeline.h"

namespace rv {
namespace {

constexpr int kWarmup = 2;
constexpr int kIterations = 10;
constexpr std::size_t kLeadInBytes = std::size_t{256} << 20;
constexpr std::size_t kChunkFloats = std::size_t{1} << 20;  // generated per rank, then tiled

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

// Gradient-like values, different per rank: 1 Mi generated, then doubled in place on the
// device until the arena is full (timing on zeros could flatter the fold).
void fill_arenas(LoopbackPipeline& pipeline) {
  const std::size_t n = pipeline.n();
  for (std::uint32_t r = 0; r < pipeline.world(); ++r) {
    const std::size_t first = std::min(n, kChunkFloats);
    const std::vector<float> chunk =
        generate_arena(ArenaSpec{kLatestGenerator, Distribution::kNormal, 42}, r, first);
    float* arena = pipeline.arena(r);
    check(cudaMemcpy(arena, chunk.data(), first * sizeof(float), cudaMemcpyHostToDevice), "upload");
    for (std::size_t filled = first; filled < n;) {
      const std::size_t count = std::min(filled, n - filled);
      check(cudaMemcpy(arena + filled, arena, count * sizeof(float), cudaMemcpyDeviceToDevice),
            "tile");
      filled += count;
    }
  }
  check(cudaDeviceSynchronize(), "fill");
}

void BM_LoopbackOverlap(benchmark::State& state) {
  const auto world = static_cast<std::uint32_t>(state.range(0));
  const auto mib = static_cast<std::size_t>(state.range(1));
  const auto pieces = static_cast<std::size_t>(state.range(2));
  const std::size_t n = (mib << 20) / sizeof(float);
  LoopbackPipeline pipeline(0, world, n, pieces);
  fill_arenas(pipeline);
  const DeviceBuffer lead_in(0, kLeadInBytes);
  const auto stream = static_cast<cudaStream_t>(pipeline.stream());
  cudaEvent_t start = nullptr, end = nullptr;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&end), "event");

  double enqueue_ms = 0;
  // The mean keeps the repeated reductions' values bounded.
  const auto timed = [&](LoopbackWork work) {
    check(cudaMemsetAsync(lead_in.data(), 0, kLeadInBytes, stream), "lead-in");
    check(cudaEventRecord(start, stream), "record");
    const auto issued = std::chrono::steady_clock::now();
    pipeline.enqueue(Op::kMean, {}, work);
    enqueue_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - issued)
            .count();
    check(cudaEventRecord(end, stream), "record");
    check(cudaEventSynchronize(end), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, end), "elapsed");
    return static_cast<double>(ms);
  };
  for (int i = 0; i < kWarmup; ++i) {
    for (LoopbackWork work :
         {LoopbackWork::kReduce, LoopbackWork::kCopiesOnly, LoopbackWork::kFoldsOnly}) {
      timed(work);
    }
  }

  std::vector<double> reduce_ms, copies_ms, folds_ms, enqueues_ms;
  for (auto _ : state) {
    reduce_ms.push_back(timed(LoopbackWork::kReduce));
    enqueues_ms.push_back(enqueue_ms);
    copies_ms.push_back(timed(LoopbackWork::kCopiesOnly));
    folds_ms.push_back(timed(LoopbackWork::kFoldsOnly));
    state.SetIterationTime(reduce_ms.back() / 1e3);
  }
  check(cudaGetLastError(), "kernel");

  const double reduce = median(reduce_ms), copies = median(copies_ms), folds = median(folds_ms);
  const double traffic = 4.0 * static_cast<double>(n) * (5.0 * world + 1.0);
  state.counters["reduce_ms"] = reduce;
  state.counters["copies_ms"] = copies;
  state.counters["folds_ms"] = folds;
  state.counters["serial_ms"] = copies + folds;
  state.counters["hidden_fraction"] = folds > 0 ? (copies + folds - reduce) / folds : 0.0;
  state.counters["enqueue_ms"] = median(enqueues_ms);
  state.counters["traffic_GBps"] = traffic / (reduce / 1e3) / 1e9;
  state.SetLabel("W=" + std::to_string(world) + " " + std::to_string(mib) + " MiB, " +
                 std::to_string(pipeline.pieces()) + (pieces == 1 ? " piece" : " pieces"));
  cudaEventDestroy(start);
  cudaEventDestroy(end);
}

void overlap_arguments(benchmark::internal::Benchmark* b) {
  for (std::int64_t world : {2, 4, 8}) {
    for (std::int64_t mib : {16, 256}) {
      for (std::int64_t pieces : {1, 2, 4, 8}) b->Args({world, mib, pieces});
    }
  }
  b->ArgNames({"W", "MiB", "pieces"});
}

BENCHMARK(BM_LoopbackOverlap)
    ->Apply(overlap_arguments)
    ->UseManualTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rv
