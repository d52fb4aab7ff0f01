// The exact gradient accumulator on the CPU (docs/DESIGN.md §11): one micro-batch's add into
// the running exact sums, against a memcpy of the same gradient and a float `+=` (what a
// trainer does today), and the combine's export and finish for one rank. Per distribution;
// 4 Mi elements (16 MiB of gradient, 32 MiB of digits). Measures only; never asserts.
//   bench_cpu --benchmark_filter=Accumulator --benchmark_out=… --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/arena.h"
#include "core/exact/exact_accumulator.h"

namespace rv {
namespace {

constexpr std::size_t kN = std::size_t{1} << 22;

void set_bytes(benchmark::State& state, double bytes_per_element) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(kN));
  state.SetBytesProcessed(static_cast<std::int64_t>(static_cast<double>(state.iterations()) *
                                                    bytes_per_element * static_cast<double>(kN)));
}

// Arg: distribution. Eight micro-batches cycle through the add (a window that keeps moving
// down as smaller addends arrive, as in training).
void BM_AccumulatorAdd(benchmark::State& state) {
  const auto dist = static_cast<Distribution>(state.range(0));
  std::vector<std::vector<float>> batches;
  for (std::uint32_t r = 0; r < 8; ++r) batches.push_back(generate_arena({1, dist, 3}, r, kN));
  ExactAccumulator acc(kN);
  std::size_t i = 0;
  for (auto _ : state) {
    acc.add(batches[i++ % 8].data(), 0, kN);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 4.0 + 16.0);  // read the gradient, read and write the digits
  state.counters["wide_blocks"] = static_cast<double>(acc.wide_blocks());
  state.counters["bytes_per_element"] = static_cast<double>(acc.bytes()) / static_cast<double>(kN);
}

// A training step's start: clear (the digits' storage kept) and one normal micro-batch's
// add, so that the cost of returning every block to zero digits is counted wherever it falls.
void BM_AccumulatorClearAndAdd(benchmark::State& state) {
  const std::vector<float> g = generate_arena({1, Distribution::kNormal, 3}, 0, kN);
  ExactAccumulator acc(kN);
  acc.add(g.data(), 0, kN);
  for (auto _ : state) {
    acc.clear();
    acc.add(g.data(), 0, kN);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 4.0 + 16.0);
  state.counters["bytes_per_element"] = static_cast<double>(acc.bytes()) / static_cast<double>(kN);
}

void BM_AccumulatorFloatPlusEquals(benchmark::State& state) {
  const std::vector<float> g = generate_arena({1, Distribution::kNormal, 3}, 0, kN);
  std::vector<float> sum(kN, 0.0f);
  for (auto _ : state) {
    for (std::size_t k = 0; k < kN; ++k) sum[k] += g[k];
    benchmark::ClobberMemory();
  }
  set_bytes(state, 12.0);
}

void BM_AccumulatorMemcpyOfTheGradient(benchmark::State& state) {
  const std::vector<float> g = generate_arena({1, Distribution::kNormal, 3}, 0, kN);
  std::vector<float> copy(kN);
  for (auto _ : state) {
    std::memcpy(copy.data(), g.data(), kN * sizeof(float));
    benchmark::ClobberMemory();
  }
  set_bytes(state, 8.0);
}

// One rank's export and finish (W = 1) after eight normal micro-batches.
void BM_AccumulatorExportAndFinish(benchmark::State& state) {
  ExactAccumulator acc(kN);
  for (std::uint32_t r = 0; r < 8; ++r) {
    const std::vector<float> g = generate_arena({1, Distribution::kNormal, 3}, r, kN);
    acc.add(g.data(), 0, kN);
    acc.end_micro_batch();
  }
  std::vector<std::int64_t> agreed(acc.agreement_size());
  acc.agreement_words(0, Op::kMean, 8, agreed.data());
  const AccumulatorPlan plan = acc.plan(agreed.data(), 1);
  std::vector<std::int64_t> digits(plan.words);
  std::vector<float> out(kN);
  for (auto _ : state) {
    acc.export_digits(plan, digits.data());
    finish_accumulated(plan, digits.data(), Op::kMean, 8, kN, out.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, 8.0 + 8.0 + 8.0 + 4.0);
}

BENCHMARK(BM_AccumulatorAdd)
    ->Arg(static_cast<int>(Distribution::kNormal))
    ->Arg(static_cast<int>(Distribution::kCancel))
    ->Arg(static_cast<int>(Distribution::kWide))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_AccumulatorClearAndAdd)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AccumulatorFloatPlusEquals)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AccumulatorMemcpyOfTheGradient)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AccumulatorExportAndFinish)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace rv
