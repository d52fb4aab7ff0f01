// The digest tree's leaves on a GPU (docs/DESIGN.md §12), what the audit trail digests every
// step: a DDP bucket (25 MiB, one piece) and a model's parameters read in place as pieces
// (7 × 64 MiB and 6 × 16 KiB, the ~100 M-parameter MLP of python/bench), timed with events
// and reported as bytes hashed per second against two ceilings measured in the same run: a
// read-only probe kernel (what reading alone reaches) and cudaMemcpy device-to-device (read +
// write counted, as the other benchmarks count it):
//   read_fraction = hashed bytes/s ÷ the probe's read bytes/s
// Measures only; never asserts.
//   bench_cuda_exact --benchmark_filter=DigestTree --benchmark_out=FILE.json
//                    --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "bench/cuda/harness.h"
#include "bench/cuda/read_probe.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/device_info.h"
#include "core/cuda/digest/digest_tree_kernel.h"
#include "core/digest/digest_tree.h"

namespace rv {
namespace {

template <typename Launch>
double event_median_seconds(Launch&& launch) {
  cudaEvent_t start, stop;
  bench::check(cudaEventCreate(&start), "event");
  bench::check(cudaEventCreate(&stop), "event");
  for (int i = 0; i < bench::kWarmup; ++i) launch();
  std::vector<double> seconds;
  for (int i = 0; i < bench::kIterations; ++i) {
    bench::check(cudaEventRecord(start, nullptr), "record");
    launch();
    bench::check(cudaEventRecord(stop, nullptr), "record");
    bench::check(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    bench::check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    seconds.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return bench::median(seconds);
}

void BM_DigestTree(benchmark::State& state) {
  if (!cuda_device_present()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  // range(0): 0 = one 25 MiB bucket, 1 = the parameters as 13 pieces.
  std::vector<std::size_t> sizes;
  if (state.range(0) == 0) {
    sizes = {std::size_t{25} << 20};
  } else {
    for (int layer = 0; layer < 7; ++layer) {
      sizes.push_back(std::size_t{64} << 20);
      if (layer < 6) sizes.push_back(std::size_t{16} << 10);
    }
  }
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::vector<DigestPiece> pieces;
  std::size_t total = 0;
  for (std::size_t size : sizes) {
    buffers.push_back(std::make_unique<DeviceBuffer>(0, size));
    buffers.back()->fill_bytes(0x5a);
    pieces.push_back({buffers.back()->data(), size});
    total += size;
  }
  DeviceBuffer leaves(0, 16 * tree_leaf_count(total)), copy_target(0, sizes[0]);
  DeviceBuffer words(0, 64 * 4 * 1024);
  auto* leaf_bytes = static_cast<std::uint8_t*>(leaves.data());
  double seconds = 0;
  for (auto _ : state) {
    seconds = event_median_seconds([&] {
      if (pieces.size() == 1) {
        launch_digest_tree_leaves(pieces[0].address, total, xxh3_default_secret(), leaf_bytes,
                                  nullptr);
      } else {
        launch_digest_tree_leaves_of_pieces(pieces.data(), pieces.size(), xxh3_default_secret(),
                                            leaf_bytes, nullptr);
      }
    });
    state.SetIterationTime(seconds);
  }
  const double probe = event_median_seconds([&] {
    bench::launch_read_probe(buffers[0]->floats(), sizes[0] / 4,
                             static_cast<std::uint32_t*>(words.data()), nullptr);
  });
  const double copy = event_median_seconds([&] {
    bench::check(cudaMemcpyAsync(copy_target.data(), buffers[0]->data(), sizes[0],
                                 cudaMemcpyDeviceToDevice, nullptr),
                 "copy");
  });
  const double hashed = static_cast<double>(total) / seconds;
  const double read = static_cast<double>(sizes[0]) / probe;
  state.counters["bytes"] = static_cast<double>(total);
  state.counters["pieces"] = static_cast<double>(pieces.size());
  state.counters["median_ms"] = seconds * 1e3;
  state.counters["GBps"] = hashed / 1e9;
  state.counters["read_probe_GBps"] = read / 1e9;
  state.counters["copy_GBps"] = 2.0 * static_cast<double>(sizes[0]) / copy / 1e9;
  state.counters["read_fraction"] = hashed / read;
}
BENCHMARK(BM_DigestTree)
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rv
