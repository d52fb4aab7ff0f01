// Arena generation per distribution (elements/s), EmulatedWorld per case, and the whole
// re-derivation of one golden line (generate, fold, hash) that `check` runs per case.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "core/arena.h"
#include "core/digest/digest.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/emulated_world.h"

namespace rv {
namespace {

void BM_ArenaGenerate(benchmark::State& state) {
  const auto dist = static_cast<Distribution>(state.range(0));
  const std::size_t n = std::size_t{1} << 20;
  std::vector<float> out(n);
  for (auto _ : state) {
    generate_arena_slice({1, dist, 7}, 3, 0, n, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.SetLabel(std::string(to_string(dist)));
}
BENCHMARK(BM_ArenaGenerate)->DenseRange(0, kDistributionCount - 1);

// Args: W, N. One all-reduce of the emulated owner dataflow under a shuffled delivery
// order; items = W × N addends. The arenas are restored outside the timed region.
void BM_EmulatedWorld(benchmark::State& state) {
  CaseId id;
  id.world = static_cast<std::uint32_t>(state.range(0));
  id.count = static_cast<std::uint64_t>(state.range(1));
  id.dist = Distribution::kCancel;
  const std::vector<std::vector<float>> inputs = generate_case_arenas(id);
  const DeliveryOrders orders = shuffled_delivery_orders(id.world, 1, 1);
  const EmulatedWorld world(id.world);
  std::vector<std::vector<float>> arenas;
  for (auto _ : state) {
    state.PauseTiming();
    arenas = inputs;
    state.ResumeTiming();
    world.all_reduce(arenas, Op::kSum, orders);
    benchmark::DoNotOptimize(arenas[0].data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * id.world * id.count));
}
BENCHMARK(BM_EmulatedWorld)
    ->Args({2, 65536})
    ->Args({8, 65536})
    ->Args({64, 4099})
    ->Args({3, 1000003})
    ->Args({16, 1000003})
    ->Unit(benchmark::kMillisecond);

// Args: W, N. digest_case: what `check` does for one line, streamed; items = W × N.
void BM_DigestCase(benchmark::State& state) {
  CaseId id;
  id.world = static_cast<std::uint32_t>(state.range(0));
  id.count = static_cast<std::uint64_t>(state.range(1));
  id.dist = Distribution::kNormal;
  for (auto _ : state) benchmark::DoNotOptimize(digest_case(id));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * id.world * id.count));
}
BENCHMARK(BM_DigestCase)->Args({2, 1 << 24})->Args({256, 4099})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rv

BENCHMARK_MAIN();
