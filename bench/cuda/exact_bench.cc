// The exact contract's kernels against cudaMemcpy device-to-device, measured in the same run
// on the same device: 256 MiB of `normal` floats (64 Mi elements, one limb per element, as
// every block of gradient-like data gets), the plan of a world of 8. Each kernel and a copy
// are timed (harness.h) with CUDA events, alternately in each iteration (so both see the same
// clocks), after a warm-up, each enqueued while the device is still busy with the work before it
// (no launch gaps in the timings); the counters are medians.
//   encode traffic:    4 B read + 8 B written per element (the digits)
//   round traffic:     8 B read + 4 B written per element
//   agreement traffic: 4 B read per element + 24 B written per 1024 elements
//   stacked traffic:   W × 4 B read + 4 B written per element (the whole exact reduction of
//                      W slots in one launch, as a fold of W slots would move)
//   copy: (read + written) / 2 bytes copied, i.e. the same bytes moved
//   copy_fraction = kernel bandwidth / copy bandwidth (target ≥ 0.8 on the H200)
// The stacked kernel runs on W = 2, 3, 4, 6 and 8 slots of the same values, each rotated by a
// different offset (distinct addends of the same magnitudes), for sum and mean.
// Variants: the agreement's loads (detail::AgreementLoads), the encode with the limb width
// known at run time or as a compile-time constant, the round for sum and for mean, the mean
// with the long division by W, its reciprocal, in double screened for midpoints, as the
// correctly rounded double quotient, or (W = 8 being a power of two) no division
// (detail::LimbWidth, detail::MeanDivision; "(default)" marks what the device uses at W = 8).
// The divisions run on W = 8's sums (eight copies of one rank: every mean is a float, never
// near a midpoint) and, as the mean a world of three uses, on the sums of three different
// ranks (stacked slots 0-2), where about 3 % of the means are exact float midpoints.
//
// Run: bench_cuda_exact --benchmark_out=FILE.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/cuda/harness.h"
#include "bench/cuda/read_probe.h"
#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_plan.h"
#include "core/exact/host_exact.h"

namespace rv {
namespace {

constexpr std::size_t kValueBytes = std::size_t{256} << 20;
constexpr std::size_t kValues = kValueBytes / sizeof(float);
constexpr std::uint32_t kWorld = 8;
constexpr std::uint32_t kLargestStackedWorld = 8;
using bench::check;
using bench::kIterations;

// Everything the kernels read and write, made once for all benchmarks: the values, their
// plan (agreement words through the kernel, the plan on the host), the digits, the sums of
// kWorld identical ranks (realistic magnitudes for the round), the results, and a copy
// source and target large enough for the largest kernel's traffic.
struct Workload {
  DeviceBuffer values, agreement, slots, digits, sums, results, stacked, copy_source, copy_target;
  ExactPlan plan;
  ExactPlanView view;
  // A world of three different ranks (stacked slots 0-2), for the mean of a W that is not a
  // power of two: its plan and its summed digits.
  DeviceBuffer slots3, sums3;
  ExactPlan plan3;
  ExactPlanView view3;
  cudaStream_t stream = nullptr;

  Workload() {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    const std::vector<float> host =
        generate_arena(ArenaSpec{kLatestGenerator, Distribution::kNormal, 42}, 0, kValues);
    values = DeviceBuffer(0, kValueBytes);
    values.upload(host.data(), kValueBytes);
    const std::size_t agreement_words = exact_block_count(kValues) * exact::kAgreementWords;
    agreement = DeviceBuffer(0, agreement_words * sizeof(std::int64_t));
    auto* agreed_device = static_cast<std::int64_t*>(agreement.data());
    launch_exact_agreement_words(values.floats(), kValues, agreed_device, stream);
    check(cudaStreamSynchronize(stream), "agreement");
    std::vector<std::int64_t> agreed(agreement_words);
    agreement.download(agreed.data(), agreed.size() * sizeof(std::int64_t));
    plan = plan_exact_blocks(agreed.data(), kValues, kWorld);
    slots = DeviceBuffer(0, plan.blocks.size() * sizeof(ExactBlockSlot));
    slots.upload(plan.blocks.data(), plan.blocks.size() * sizeof(ExactBlockSlot));
    view = view_of(plan, static_cast<const ExactBlockSlot*>(slots.data()));
    digits = DeviceBuffer(0, plan.words * sizeof(std::int64_t));
    sums = DeviceBuffer(0, plan.words * sizeof(std::int64_t));
    launch_exact_encode(values.floats(), view, digit_words(), stream);
    launch_combine_words(digit_words(), kWorld, 0, plan.words, IntReduction::kSum, sum_words(),
                         stream);
    results = DeviceBuffer(0, kValueBytes);
    stacked = DeviceBuffer(0, kLargestStackedWorld * kValueBytes);
    for (std::uint32_t r = 0; r < kLargestStackedWorld; ++r) {
      // Slot r: the values rotated left by r × 40,961 elements.
      const std::size_t shift = (r * std::size_t{40961}) % kValues;
      float* slot = stacked.floats() + r * kValues;
      check(cudaMemcpyAsync(slot, values.floats() + shift, (kValues - shift) * sizeof(float),
                            cudaMemcpyDeviceToDevice, stream),
            "stack");
      check(cudaMemcpyAsync(slot + (kValues - shift), values.floats(), shift * sizeof(float),
                            cudaMemcpyDeviceToDevice, stream),
            "stack");
    }
    set_up_world_of_three(agreement_words);
    const std::size_t largest_traffic = std::max(kValueBytes + plan.words * sizeof(std::int64_t),
                                                 (kLargestStackedWorld + 1) * kValueBytes);
    copy_source = DeviceBuffer(0, largest_traffic / 2);
    copy_target = DeviceBuffer(0, largest_traffic / 2);
    check(cudaMemsetAsync(copy_source.data(), 0x3C, copy_source.bytes(), stream), "memset");
    check(cudaStreamSynchronize(stream), "set-up");
  }
  ~Workload() { cudaStreamDestroy(stream); }

  void set_up_world_of_three(std::size_t agreement_words) {
    auto* agreed_device = static_cast<std::int64_t*>(agreement.data());
    std::vector<std::int64_t> agreed(agreement_words), mine(agreement_words);
    for (std::uint32_t r = 0; r < 3; ++r) {
      launch_exact_agreement_words(stacked.floats() + r * kValues, kValues, agreed_device, stream);
      check(cudaStreamSynchronize(stream), "agreement of three");
      agreement.download((r == 0 ? agreed : mine).data(), agreement_words * sizeof(std::int64_t));
      if (r != 0) merge_agreement_words(agreed.data(), mine.data(), agreement_words);
    }
    plan3 = plan_exact_blocks(agreed.data(), kValues, 3);
    slots3 = DeviceBuffer(0, plan3.blocks.size() * sizeof(ExactBlockSlot));
    slots3.upload(plan3.blocks.data(), plan3.blocks.size() * sizeof(ExactBlockSlot));
    view3 = view_of(plan3, static_cast<const ExactBlockSlot*>(slots3.data()));
    DeviceBuffer digits3(0, 3 * plan3.words * sizeof(std::int64_t));
    auto* digit_words3 = static_cast<std::int64_t*>(digits3.data());
    for (std::uint32_t r = 0; r < 3; ++r) {
      launch_exact_encode(stacked.floats() + r * kValues, view3, digit_words3 + r * plan3.words,
                          stream);
    }
    sums3 = DeviceBuffer(0, plan3.words * sizeof(std::int64_t));
    launch_combine_words(digit_words3, 3, plan3.words, plan3.words, IntReduction::kSum,
                         static_cast<std::int64_t*>(sums3.data()), stream);
    check(cudaStreamSynchronize(stream), "sums of three");
  }
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  std::int64_t* digit_words() const { return static_cast<std::int64_t*>(digits.data()); }
  std::int64_t* sum_words() const { return static_cast<std::int64_t*>(sums.data()); }
  double digit_bytes() const { return static_cast<double>(plan.words * sizeof(std::int64_t)); }
};

Workload& workload() {
  static Workload w;
  return w;
}

// Times `kernel` (moving `bytes`) against a copy of bytes / 2 (the same bytes moved) and adds
// the bytes per element to the harness's counters.
void measure(benchmark::State& state, const std::function<void()>& kernel, double bytes,
             const std::string& label) {
  Workload& w = workload();
  bench::time_kernel_against_copy(
      state, w.stream, kernel, bytes,
      {w.copy_target.data(), w.copy_source.data(), static_cast<std::size_t>(bytes / 2)});
  state.counters["bytes_per_element"] = bytes / static_cast<double>(kValues);
  state.SetLabel(label);
}

void BM_ExactAgreement(benchmark::State& state) {
  Workload& w = workload();
  const auto loads = detail::kAllAgreementLoads[state.range(0)];
  const double bytes = static_cast<double>(kValueBytes) + static_cast<double>(w.agreement.bytes());
  measure(
      state,
      [&] {
        detail::launch_exact_agreement_words_with(w.values.floats(), kValues,
                                                  static_cast<std::int64_t*>(w.agreement.data()),
                                                  w.stream, loads);
      },
      bytes,
      std::string("agreement words ") + detail::to_string(loads) +
          (loads == detail::default_agreement_loads() ? " (default)" : ""));
}

// Not an exact kernel: the read-only probe (read_probe.h), the ceiling the agreement's
// traffic can reach on this device.
void BM_ReadOnlyProbe(benchmark::State& state) {
  Workload& w = workload();
  // Its few words go where the round's results go (far larger).
  auto* words = static_cast<std::uint32_t*>(w.results.data());
  measure(
      state, [&] { rv::bench::launch_read_probe(w.values.floats(), kValues, words, w.stream); },
      static_cast<double>(kValueBytes), "read-only probe (not a kernel of the contract)");
}

void BM_ExactEncode(benchmark::State& state) {
  Workload& w = workload();
  const auto width = detail::kAllLimbWidths[state.range(0)];
  measure(
      state,
      [&] {
        detail::launch_exact_encode_with(w.values.floats(), w.view, w.digit_words(), w.stream,
                                         width);
      },
      static_cast<double>(kValueBytes) + w.digit_bytes(),
      std::string("encode ") + detail::to_string(width) +
          (width == detail::default_limb_width() ? " (default)" : ""));
}

void BM_ExactRound(benchmark::State& state) {
  Workload& w = workload();
  const Op op = state.range(0) == 0 ? Op::kSum : Op::kMean;
  const auto division = detail::kAllMeanDivisions[state.range(1)];
  std::string label = std::string("round ") + std::string(to_string(op));
  if (op == Op::kMean) {
    label += std::string(" ") + detail::to_string(division) +
             (division == detail::default_mean_division(kWorld) ? " (default)" : "");
  }
  measure(
      state,
      [&] {
        detail::launch_exact_round_with(w.sum_words(), w.view, op, w.results.floats(), w.stream,
                                        division);
      },
      w.digit_bytes() + static_cast<double>(kValueBytes), label);
}

// The mean's round over the sums of three different ranks (W = 3: no power of two), by each
// division that applies. Arg: the index in detail::kAllMeanDivisions.
void BM_ExactRoundMeanOfThree(benchmark::State& state) {
  Workload& w = workload();
  const auto division = detail::kAllMeanDivisions[state.range(0)];
  measure(
      state,
      [&] {
        detail::launch_exact_round_with(static_cast<const std::int64_t*>(w.sums3.data()), w.view3,
                                        Op::kMean, w.results.floats(), w.stream, division);
      },
      static_cast<double>(w.plan3.words * sizeof(std::int64_t)) + static_cast<double>(kValueBytes),
      std::string("round mean W=3 ") + detail::to_string(division) +
          (division == detail::default_mean_division(3) ? " (default)" : ""));
}

// The stacked kernel over W slots of the workload's normal values, (W + 1) · 4 bytes per
// element counted. W = 3 and 6 round the mean through the correctly rounded double quotient;
// 2, 4 and 8 scale it by 2^−k.
void BM_ExactStacked(benchmark::State& state) {
  Workload& w = workload();
  const auto world = static_cast<std::uint32_t>(state.range(0));
  const Op op = state.range(1) == 0 ? Op::kSum : Op::kMean;
  measure(
      state,
      [&] {
        launch_exact_reduce_stacked(w.stacked.floats(), world, kValues, kValues, op,
                                    w.results.floats(), w.stream);
      },
      static_cast<double>(world + 1) * static_cast<double>(kValueBytes),
      "stacked W=" + std::to_string(world) + " " + std::string(to_string(op)));
}

BENCHMARK(BM_ExactAgreement)
    ->ArgNames({"loads"})
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadOnlyProbe)
    ->UseManualTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExactEncode)
    ->ArgNames({"width"})
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExactRound)
    ->ArgNames({"mean", "division"})
    ->Args({0, 2})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Args({1, 3})
    ->UseManualTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_ExactRoundMeanOfThree)
    ->ArgNames({"division"})
    ->Arg(0)
    ->Arg(1)
    ->Arg(3)
    ->Arg(4)
    ->UseManualTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_ExactStacked)
    ->ArgNames({"world", "mean"})
    ->ArgsProduct({{2, 3, 4, 6, kLargestStackedWorld}, {0, 1}})
    ->UseManualTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);

// bench_cuda_exact's own context, beside the harness's (it makes the workload).
void add_exact_context() {
  benchmark::AddCustomContext("values", std::to_string(kValues) + " normal floats (seed 42)");
  benchmark::AddCustomContext("world", std::to_string(kWorld));
  const Workload& w = workload();
  benchmark::AddCustomContext(
      "digit_words_per_element",
      std::to_string(static_cast<double>(w.plan.words) / static_cast<double>(kValues)));
}

}  // namespace
}  // namespace rv

int main(int argc, char** argv) {
  return rv::bench::run_cuda_benchmarks(argc, argv, "bench_cuda_exact", rv::add_exact_context);
}
