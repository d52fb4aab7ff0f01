// The native bf16/f16 stacked kernels (core/cuda/half_stacked_kernel.h) against cudaMemcpy
// device-to-device, measured as bench_cuda measures the f32 fold (fold_bench.cc): W stacked
// slots of n 2-byte elements, the kernel and the copy timed (harness.h) with CUDA events
// alternately in each iteration, each enqueued while the device is still busy with the work before
// it, after a warm-up; the counters are medians.
//   kernel traffic: W slots read + 1 written = (W + 1) × 2n bytes
//   copy traffic:   the same W slots read + written elsewhere = 2 × (table bytes)
//   copy_fraction = kernel bandwidth / copy bandwidth (target ≥ 0.9 on the H200)
// Kernels: the fold (sum and mean) and the exact contract (sum and mean; the mean at W = 3 is a
// division, at W = 2^k a scaling), for bf16 and f16, each in every shape (detail::HalfFoldShape,
// detail::HalfExactShape; the label names it and marks the default), so that one run compares
// them. Data: gradient-like (`normal`) arenas of the dtype, every slot its own rank's. Sizes:
// slots of 2^20, 2^24 and 2^27 elements (2, 32 and 256 MiB). Layouts (element offsets from a
// 16-byte boundary): the aligned table (the vector path), a stride of n + 1 (neighbouring slots
// at different phases), the output one element off, and table, stride and output all at
// different phases (the realigned path). 2^20 and 2^24: every layout, sum and mean; 2^27 (W ≤ 8):
// the mean, aligned and table+3 stride+5 out+6. The copy always moves the aligned buffers: it is
// the ceiling, not a copy of the same misalignment.
//
// Run: bench_cuda_half --benchmark_out=cuda-half-h200.json --benchmark_out_format=json
// (2816 cases, minutes on one GPU; --benchmark_filter='/n:16777216/',
// '/kernel:1/.*/shape:0/' and so on for a part: the arguments are in each case's name).
// --flush_l2 (harness.h, l2_flush.h): each timed kernel and copy starts from an L2 of clean
// lines instead of after the other's writes; the context records which.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/cuda/harness.h"
#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/half_stacked_kernel.h"
#include "core/dtype_law.h"

namespace rv {
namespace {

using bench::check;
using bench::kIterations;

struct Layout {
  const char* name;
  std::size_t table_phase;  // elements past a 16-byte boundary
  std::size_t stride_extra;
  std::size_t out_phase;
};
constexpr Layout kLayouts[] = {
    {"aligned", 0, 0, 0},
    {"stride+1", 0, 1, 0},
    {"out+1", 0, 0, 1},
    {"table+3 stride+5 out+6", 3, 5, 6},
};

constexpr DType kDTypes[] = {DType::kBF16, DType::kF16};
enum class Kernel { kFold, kExact };
const char* name_of(Kernel k) { return k == Kernel::kFold ? "fold" : "exact"; }

// The first 2^24 elements of rank r's gradient-like arena of the dtype (its 2-byte elements),
// made once: longer slots repeat them (generating 2^27 elements per slot on the host would
// take longer than the measurements).
constexpr std::size_t kPattern = std::size_t{1} << 24;
const std::vector<std::uint16_t>& slot_pattern(DType dtype, std::uint32_t rank) {
  static std::map<std::pair<int, std::uint32_t>, std::vector<std::uint16_t>> made;
  std::vector<std::uint16_t>& bits = made[{static_cast<int>(dtype), rank}];
  if (bits.empty()) {
    const std::vector<float> values = generate_arena(
        ArenaSpec{kLatestGenerator, Distribution::kNormal, 42, dtype}, rank, kPattern);
    bits.resize(kPattern);
    for (std::size_t i = 0; i < kPattern; ++i) bits[i] = half_bits(dtype, values[i]);
  }
  return bits;
}

// Every case's result, for the summary printed after the run (print_summary).
struct Result {
  std::string kernel, dtype, shape;
  std::int64_t n, world, layout, mean;
  bool is_default;
  double copy_fraction;
};
std::vector<Result> results;

// The table of the last case, kept while the cases (both kernels, every shape and op of one
// dtype, W, n and layout) need the same one: uploads of 256 MiB slots take longer than the
// timing. Released before main returns.
struct Tables {
  std::int64_t dtype = -1, world = 0, n = 0, layout = -1;
  DeviceBuffer table, out, copy_target;
};
Tables kept;

void BM_HalfVsCopy(benchmark::State& state) {
  const auto kernel = static_cast<Kernel>(state.range(0));
  const DType dtype = kDTypes[state.range(1)];
  const auto world = static_cast<std::uint32_t>(state.range(2));
  const auto n = static_cast<std::size_t>(state.range(3));
  const Layout& layout = kLayouts[state.range(4)];
  const Op op = state.range(5) != 0 ? Op::kMean : Op::kSum;
  const auto shape_index = static_cast<std::size_t>(state.range(6));
  const detail::HalfExactShape shape = detail::kAllHalfExactShapes[std::min(
      shape_index, std::size(detail::kAllHalfExactShapes) - 1)];
  const detail::HalfFoldShape fold_shape =
      detail::kAllHalfFoldShapes[std::min(shape_index, std::size(detail::kAllHalfFoldShapes) - 1)];
  const std::size_t stride = n + layout.stride_extra;
  const std::size_t table_elements = (world - 1) * stride + n;

  const bool same = kept.dtype == state.range(1) && kept.world == state.range(2) &&
                    kept.n == state.range(3) && kept.layout == state.range(4);
  if (!same) {
    kept = Tables{};  // frees the last case's buffers first
    kept.table = DeviceBuffer(0, (table_elements + 8) * 2);
    kept.out = DeviceBuffer(0, (n + 8) * 2);
    kept.copy_target = DeviceBuffer(0, table_elements * 2);
  }
  const DeviceBuffer& table = kept.table;
  const DeviceBuffer& out = kept.out;
  const DeviceBuffer& copy_target = kept.copy_target;
  auto* const stacked = static_cast<std::uint16_t*>(table.data()) + layout.table_phase;
  auto* const result = static_cast<std::uint16_t*>(out.data()) + layout.out_phase;
  // Distinct slots up to 4 (uploads of a 256 MiB slot are slow), repeated above.
  for (std::uint32_t r = 0; r < world && !same; ++r) {
    if (r < 4) {
      const std::vector<std::uint16_t>& values = slot_pattern(dtype, r);
      for (std::size_t begin = 0; begin < n; begin += kPattern) {
        check(cudaMemcpy(stacked + r * stride + begin, values.data(),
                         std::min(kPattern, n - begin) * 2, cudaMemcpyHostToDevice),
              "upload");
      }
    } else {
      check(cudaMemcpy(stacked + r * stride, stacked + (r % 4) * stride, n * 2,
                       cudaMemcpyDeviceToDevice),
            "fill");
    }
  }
  kept.dtype = state.range(1);
  kept.world = state.range(2);
  kept.n = state.range(3);
  kept.layout = state.range(4);
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");

  const double copy_fraction = bench::time_kernel_against_copy(
      state, stream,
      [&] {
        if (kernel == Kernel::kFold) {
          detail::cuda_fold_stacked_half_shaped(stacked, world, stride, n, op, dtype, result,
                                                stream, fold_shape);
        } else {
          detail::cuda_exact_stacked_half_shaped(stacked, world, stride, n, op, dtype, result,
                                                 stream, shape);
        }
      },
      static_cast<double>(world + 1) * 2.0 * static_cast<double>(n),
      {copy_target.data(), table.data(), table_elements * 2});
  const detail::HalfPath path = detail::half_path(stacked, world, stride, n, result);
  std::string label = std::string(name_of(kernel)) + " " + std::string(to_string(dtype)) + " " +
                      std::string(to_string(op)) + " " + detail::to_string(path) + " " +
                      layout.name;
  const bool is_default = kernel == Kernel::kExact
                              ? shape == detail::default_half_exact_shape(world)
                              : fold_shape == detail::default_half_fold_shape(path, world);
  const std::string shape_name =
      kernel == Kernel::kExact ? detail::to_string(shape) : detail::to_string(fold_shape);
  label += " " + shape_name + (is_default ? " (default)" : "");
  state.SetLabel(label);
  results.push_back(Result{name_of(kernel), std::string(to_string(dtype)), shape_name,
                           state.range(3), state.range(2), state.range(4), state.range(5),
                           is_default, copy_fraction});
  cudaStreamDestroy(stream);
}

// For choosing the default shapes: per kernel, dtype and size, each shape's worst and median
// copy_fraction over W, layouts and ops; then per W the default's worst case and the shape
// with the best worst case.
void print_summary() {
  if (results.empty()) return;
  std::map<std::string, std::vector<double>> by_shape;
  std::map<std::string, std::map<std::string, double>> worst_by_world;
  std::map<std::string, std::string> default_by_world;
  for (const Result& r : results) {
    char key[96];
    std::snprintf(key, sizeof key, "%s %s %lldMi", r.kernel.c_str(), r.dtype.c_str(),
                  static_cast<long long>(r.n >> 20));
    by_shape[std::string(key) + " " + r.shape].push_back(r.copy_fraction);
    char world_key[112];
    std::snprintf(world_key, sizeof world_key, "%s W=%lld", key, static_cast<long long>(r.world));
    auto& worst = worst_by_world[world_key];
    const auto found = worst.find(r.shape);
    worst[r.shape] =
        found == worst.end() ? r.copy_fraction : std::min(found->second, r.copy_fraction);
    if (r.is_default) default_by_world[world_key] = r.shape;
  }
  std::printf("\nbench_cuda_half summary: copy_fraction worst/median over W, layouts, ops%s\n",
              bench::l2_flush_on() ? " (L2 flushed before each timed kernel and copy)" : "");
  for (auto& [key, values] : by_shape) {
    std::sort(values.begin(), values.end());
    std::printf("%s %.3f/%.3f\n", key.c_str(), values.front(), values[values.size() / 2]);
  }
  std::printf("per W: the default's worst case over layouts and ops | the best shape's\n");
  for (const auto& [key, worst] : worst_by_world) {
    const auto best =
        std::max_element(worst.begin(), worst.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    const std::string& dflt = default_by_world[key];
    std::printf("%s %s %.3f | %s %.3f\n", key.c_str(), dflt.c_str(),
                worst.count(dflt) ? worst.at(dflt) : 0.0, best->first.c_str(), best->second);
  }
}

void half_arguments(benchmark::internal::Benchmark* b) {
  constexpr std::int64_t kSizes[] = {std::int64_t{1} << 20, std::int64_t{1} << 24,
                                     std::int64_t{1} << 27};
  const auto layouts = static_cast<std::int64_t>(std::size(kLayouts));
  constexpr std::int64_t kWorstLayout = 3;  // table+3 stride+5 out+6
  // The kernel, the op and the shape innermost: consecutive cases share their table (kept).
  for (const std::int64_t dtype : {0, 1}) {
    for (const std::int64_t world : {2, 3, 4, 8, 16}) {
      for (const std::int64_t n : kSizes) {
        // The largest slots only at W ≤ 8: 17 × 256 MiB plus the copy's target is more than
        // needed to show the trend.
        if (n == kSizes[2] && world > 8) continue;
        for (std::int64_t l = 0; l < layouts; ++l) {
          for (const std::int64_t kernel : {0, 1}) {
            const auto shapes =
                static_cast<std::int64_t>(kernel == 0 ? std::size(detail::kAllHalfFoldShapes)
                                                      : std::size(detail::kAllHalfExactShapes));
            for (const std::int64_t mean : {0, 1}) {
              // The largest slots: the mean, aligned and the layout of every phase.
              if (n == kSizes[2] && (mean == 0 || (l != 0 && l != kWorstLayout))) continue;
              for (std::int64_t shape = 0; shape < shapes; ++shape) {
                b->Args({kernel, dtype, world, n, l, mean, shape});
              }
            }
          }
        }
      }
    }
  }
  b->ArgNames({"kernel", "dtype", "W", "n", "layout", "mean", "shape"});
}

BENCHMARK(BM_HalfVsCopy)
    ->Apply(half_arguments)
    ->UseManualTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);

// bench_cuda_half's own context, beside the harness's.
void add_half_context() {
  benchmark::AddCustomContext("data", "normal arenas of the dtype, seed 42");
}

}  // namespace
}  // namespace rv

int main(int argc, char** argv) {
  return rv::bench::run_cuda_benchmarks(argc, argv, "bench_cuda_half", rv::add_half_context, [] {
    rv::kept = rv::Tables{};  // the last case's tables, freed before the summary
    rv::print_summary();
  });
}
