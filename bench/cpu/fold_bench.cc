// The CPU fold against its ceiling. A fold of W arenas of N values reads W × N × 4 bytes and
// writes N × 4: (W + 1) × N × 4 bytes of memory traffic, the bytes/s counted here. A memcpy
// of the same traffic (half read, half written) is measured in this binary, and
// copy_fraction = fold bandwidth / memcpy bandwidth says how close the fold is to it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/arena.h"
#include "core/fold.h"

namespace rv {
namespace {

// Bytes of traffic per second of memcpy moving `traffic` bytes (half read, half written),
// timed over about `seconds` of wall time right after the fold it is compared with, so both
// see the same machine (on a shared box the load moves under any longer-lived figure).
double memcpy_bandwidth(std::size_t traffic, double seconds) {
  const std::size_t bytes = traffic / 2;
  std::vector<char> from(bytes, 1);
  std::vector<char> to(bytes, 0);
  std::memcpy(to.data(), from.data(), bytes);  // fault the pages in
  std::size_t reps = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::ClobberMemory();
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < seconds);
  return static_cast<double>(traffic) * static_cast<double>(reps) / elapsed;
}

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<char> from(bytes, 1);
  std::vector<char> to(bytes, 0);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::ClobberMemory();
  }
  // Traffic: the bytes read plus the bytes written, as for the fold.
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 2 *
                          static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_Memcpy)->Arg(1 << 20)->Arg(20 << 20)->Arg(68 << 20)->UseRealTime();

// Args: W, N. Sum (the mean only adds one multiply per element in the finishing pass).
void BM_Fold(benchmark::State& state) {
  const auto world = static_cast<std::uint32_t>(state.range(0));
  const auto n = static_cast<std::size_t>(state.range(1));
  std::vector<std::vector<float>> arenas;
  std::vector<const float*> addends;
  for (std::uint32_t r = 0; r < world; ++r) {
    arenas.push_back(generate_arena({1, Distribution::kNormal, 1}, r, n));
  }
  for (const auto& arena : arenas) addends.push_back(arena.data());
  std::vector<float> out(n);
  const std::size_t traffic = (world + std::size_t{1}) * n * sizeof(float);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    fold_ascending(addends.data(), world, n, Op::kSum, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * traffic));
  const double fold_bandwidth =
      static_cast<double>(state.iterations()) * static_cast<double>(traffic) / seconds;
  state.counters["copy_fraction"] = fold_bandwidth / memcpy_bandwidth(traffic, seconds);
}
BENCHMARK(BM_Fold)
    ->Args({2, 1 << 20})
    ->Args({4, 1 << 20})
    ->Args({8, 1 << 20})
    ->Args({16, 1 << 20})
    ->Args({2, 1 << 16})  // in cache
    ->Args({8, 1 << 16})
    ->Args({4, 1 << 22})
    ->UseRealTime();

void BM_FoldMean(benchmark::State& state) {
  const auto world = static_cast<std::uint32_t>(state.range(0));
  const auto n = static_cast<std::size_t>(state.range(1));
  std::vector<float> stacked(world * n);
  for (std::uint32_t r = 0; r < world; ++r) {
    generate_arena_slice({1, Distribution::kSpecial, 1}, r, 0, n, stacked.data() + r * n);
  }
  std::vector<float> out(n);
  for (auto _ : state) {
    fold_stacked(stacked.data(), world, n, n, Op::kMean, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * (world + std::size_t{1}) * n * 4));
}
BENCHMARK(BM_FoldMean)->Args({8, 1 << 20});

}  // namespace
}  // namespace rv
