// The exact contract's CPU element work (docs/DESIGN.md §2): agreement words, encoding into
// int64 digits and rounding the summed digits, per distribution, as elements/s, and the
// bytes per element the library's int64 all-reduces move (8 per limb word, plus the special
// words and the agreement words). Measures only; never asserts.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_plan.h"
#include "core/exact/exact_reduction.h"
#include "core/exact/host_exact.h"
#include "core/exact/stacked_in_double.h"

namespace rv {
namespace {

struct Prepared {
  std::vector<std::vector<float>> arenas;
  ExactPlan plan;
  std::vector<std::int64_t> sums;
};

// W arenas of n values, their agreed plan and their summed digits.
Prepared prepare(std::uint32_t world, std::size_t n, Distribution dist) {
  Prepared p;
  std::vector<std::int64_t> agreed(exact_block_count(n) * exact::kAgreementWords),
      mine(agreed.size());
  for (std::uint32_t r = 0; r < world; ++r) {
    p.arenas.push_back(generate_arena({1, dist, 1}, r, n));
    exact_agreement_words(p.arenas[r].data(), n, r == 0 ? agreed.data() : mine.data());
    if (r != 0) merge_agreement_words(agreed.data(), mine.data(), agreed.size());
  }
  p.plan = plan_exact_blocks(agreed.data(), n, world);
  p.sums.assign(p.plan.words, 0);
  std::vector<std::int64_t> digits(p.plan.words);
  for (std::uint32_t r = 0; r < world; ++r) {
    exact_encode(p.arenas[r].data(), p.plan, digits.data());
    for (std::size_t i = 0; i < digits.size(); ++i) p.sums[i] += digits[i];
  }
  return p;
}

void set_counters(benchmark::State& state, const Prepared& p, std::size_t n) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(n));
  const double agreement = 8.0 * exact::kAgreementWords / exact::kBlock;
  state.counters["bytes_per_element"] =
      8.0 * static_cast<double>(p.plan.words) / static_cast<double>(n) + agreement;
}

constexpr std::size_t kN = std::size_t{1} << 20;

// Arg: distribution. W = 4.
void BM_ExactAgreementWords(benchmark::State& state) {
  const auto dist = static_cast<Distribution>(state.range(0));
  const Prepared p = prepare(4, kN, dist);
  std::vector<std::int64_t> words(exact_block_count(kN) * exact::kAgreementWords);
  for (auto _ : state) {
    exact_agreement_words(p.arenas[0].data(), kN, words.data());
    benchmark::DoNotOptimize(words.data());
  }
  set_counters(state, p, kN);
  state.SetLabel(std::string(to_string(dist)));
}

void BM_ExactEncode(benchmark::State& state) {
  const auto dist = static_cast<Distribution>(state.range(0));
  const Prepared p = prepare(4, kN, dist);
  std::vector<std::int64_t> digits(p.plan.words);
  for (auto _ : state) {
    exact_encode(p.arenas[0].data(), p.plan, digits.data());
    benchmark::DoNotOptimize(digits.data());
  }
  set_counters(state, p, kN);
  state.SetLabel(std::string(to_string(dist)));
}

// Args: distribution, op (0 sum, 1 mean), W. A mean over W = 4 is the sum's rounding two
// positions lower; over W = 3 it divides (host_exact.cc).
void BM_ExactRound(benchmark::State& state) {
  const auto dist = static_cast<Distribution>(state.range(0));
  const Op op = state.range(1) == 0 ? Op::kSum : Op::kMean;
  const auto world = static_cast<std::uint32_t>(state.range(2));
  const Prepared p = prepare(world, kN, dist);
  std::vector<float> out(kN);
  for (auto _ : state) {
    exact_round(p.sums.data(), p.plan, op, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  set_counters(state, p, kN);
  state.SetLabel(std::string(to_string(dist)) + " " + std::string(to_string(op)) +
                 " W=" + std::to_string(world));
}

// The whole exact reduction of a stacked table on one CPU: W slots of 4 Mi normal floats,
// with the fold's traffic measure, (W + 1) · N · 4 bytes. Args: W, and the path: 0 the
// windowed dataflow (exact_reduce_stacked, the tests' oracle), 1 the double sums
// (exact_reduce_stacked_in_double: what the C ABI's rv_exact_reduce_stacked and the CPU DDP
// hooks run).
void BM_ExactReduceStacked(benchmark::State& state) {
  constexpr std::size_t kStackedN = std::size_t{1} << 22;
  const auto world = static_cast<std::uint32_t>(state.range(0));
  const bool in_double = state.range(1) == 1;
  std::vector<float> stacked;
  for (std::uint32_t r = 0; r < world; ++r) {
    const std::vector<float> arena = generate_arena({1, Distribution::kNormal, 1}, r, kStackedN);
    stacked.insert(stacked.end(), arena.begin(), arena.end());
  }
  std::vector<float> out(kStackedN);
  for (auto _ : state) {
    if (in_double) {
      exact_reduce_stacked_in_double(stacked.data(), world, kStackedN, kStackedN, Op::kMean,
                                     out.data());
    } else {
      exact_reduce_stacked(stacked.data(), world, kStackedN, kStackedN, Op::kMean, out.data());
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * (world + 1) *
                          static_cast<std::int64_t>(kStackedN * sizeof(float)));
  state.SetLabel(std::string(in_double ? "in double" : "dataflow") + " normal mean W=" +
                 std::to_string(world));
}

void distributions(benchmark::internal::Benchmark* b) {
  for (int d = 0; d < kDistributionCount; ++d) b->Arg(d);
}
void distributions_ops_and_worlds(benchmark::internal::Benchmark* b) {
  for (int d = 0; d < kDistributionCount; ++d) {
    b->Args({d, 0, 4});
    b->Args({d, 1, 4});
    b->Args({d, 1, 3});
  }
}

BENCHMARK(BM_ExactAgreementWords)->Apply(distributions)->UseRealTime();
BENCHMARK(BM_ExactEncode)->Apply(distributions)->UseRealTime();
BENCHMARK(BM_ExactRound)->Apply(distributions_ops_and_worlds)->UseRealTime();
BENCHMARK(BM_ExactReduceStacked)
    ->ArgsProduct({{2, 3, 4, 8}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rv
