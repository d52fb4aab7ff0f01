// The fold kernel against cudaMemcpy device-to-device, measured in the same run on the same
// device: W stacked slots of 256 MiB each. Both are timed (harness.h) with CUDA events,
// alternately in each iteration (so both see the same clocks), after a warm-up, each enqueued while
// the device is still busy with the work before it (no launch gaps in the timings); the counters
// are medians.
//   fold traffic: W slots read + 1 written = (W + 1) × 256 MiB
//   copy traffic: the same W slots read + written elsewhere = 2 × W × 256 MiB
//   copy_fraction = fold bandwidth / copy bandwidth (target ≥ 0.95 on the H200, at every
//   alignment)
// Layouts (kLayouts): the aligned table (the vector path), and tables whose slots, start or
// output sit 1…3 floats off a 16-byte boundary (the realigned path): a stride of 256 MiB +
// 1, 2 or 3 floats (neighbouring slots at different phases), an output one float off, and
// table, stride and output all at different phases. The copy always moves the aligned
// buffers: it is the ceiling, not a copy of the same misalignment.
// Shapes: at W = 2 … 8 and 16, every detail::FoldShape on the aligned layout and on
// a stride + 1, the default shape (detail::default_fold_shape, per path and W) and
// realignment on every layout, and the other realignment (detail::FoldRealign) on a
// stride + 1 and on the all-different layout.
//
// Run: bench_cuda --benchmark_out=FILE.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench/cuda/harness.h"
#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/fixed_order/fold_kernel.h"

namespace rv {
namespace {

constexpr std::size_t kSlotBytes = std::size_t{256} << 20;
constexpr std::size_t kSlotFloats = kSlotBytes / sizeof(float);
using bench::check;
using bench::kIterations;

// One slot of gradient-like values, made once: timing on zeros could flatter the kernel.
const std::vector<float>& slot_values() {
  static const std::vector<float> values =
      generate_arena(ArenaSpec{kLatestGenerator, Distribution::kNormal, 42}, 0, kSlotFloats);
  return values;
}

// Where the table and the output start, in floats past a 16-byte boundary, and how far the
// stride is past a whole number of float4s.
struct Layout {
  const char* name;
  std::size_t table_phase;
  std::size_t stride_extra;
  std::size_t out_phase;
};
constexpr Layout kLayouts[] = {
    {"aligned", 0, 0, 0},
    {"stride+1", 0, 1, 0},  // slot r at phase r mod 4, the output at slot 0's
    {"stride+2", 0, 2, 0},
    {"stride+3", 0, 3, 0},
    {"out+1", 0, 0, 1},                   // the slots share a phase, the output another
    {"table+1 stride+3 out+2", 1, 3, 2},  // nothing shares a phase
    {"table+2 stride+1 out+3", 2, 1, 3},
};

void BM_FoldVsCopy(benchmark::State& state) {
  const auto world = static_cast<std::uint32_t>(state.range(0));
  const auto shape = detail::kAllFoldShapes[state.range(1)];
  const Layout& layout = kLayouts[state.range(2)];
  const auto realign = detail::kAllFoldRealigns[state.range(3)];
  const std::size_t stride = kSlotFloats + layout.stride_extra;
  const std::size_t table_floats = (world - 1) * stride + kSlotFloats;

  // The table (W slots, `stride` floats apart), the fold's output (one slot) and the
  // copy's destination (the table's size); 4 floats more for the phases.
  const DeviceBuffer table(0, (table_floats + 4) * sizeof(float));
  const DeviceBuffer out(0, kSlotBytes + 4 * sizeof(float));
  const DeviceBuffer copy_target(0, table_floats * sizeof(float));
  float* const stacked = table.floats() + layout.table_phase;
  float* const fold_out = out.floats() + layout.out_phase;
  check(cudaMemcpy(stacked, slot_values().data(), kSlotBytes, cudaMemcpyHostToDevice), "upload");
  for (std::uint32_t r = 1; r < world; ++r) {
    check(cudaMemcpy(stacked + r * stride, stacked, kSlotBytes, cudaMemcpyDeviceToDevice), "fill");
  }
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");

  bench::time_kernel_against_copy(state, stream,
                                  [&] {
                                    detail::launch_fold_stacked_shaped(
                                        stacked, world, stride, kSlotFloats, Op::kMean, fold_out,
                                        stream, shape, realign);
                                  },
                                  static_cast<double>(world + 1) * kSlotBytes,
                                  {copy_target.data(), table.data(), table_floats * sizeof(float)},
                                  {"fold_GBps", "fold_median_ms"});
  const detail::FoldPath path = detail::fold_path(stacked, world, stride, kSlotFloats, fold_out);
  std::string label = std::string(detail::to_string(shape)) + " " + detail::to_string(path);
  if (path == detail::FoldPath::kRealigned) label += std::string("/") + detail::to_string(realign);
  label += std::string(" ") + layout.name;
  if (shape == detail::default_fold_shape(path, world) &&
      (path != detail::FoldPath::kRealigned || realign == detail::default_fold_realign())) {
    label += " (default)";
  }
  state.SetLabel(label);
  cudaStreamDestroy(stream);
}

template <typename T, std::size_t kSize>
std::int64_t index_of(const T (&all)[kSize], T value) {
  for (std::size_t i = 0; i < kSize; ++i) {
    if (all[i] == value) return static_cast<std::int64_t>(i);
  }
  return 0;
}

// The worlds the benchmark measures (and whose default shapes its context lists).
constexpr std::uint32_t kWorlds[] = {2, 3, 4, 5, 6, 7, 8, 16};

void fold_arguments(benchmark::internal::Benchmark* b) {
  const auto shapes = static_cast<std::int64_t>(std::size(detail::kAllFoldShapes));
  const auto layouts = static_cast<std::int64_t>(std::size(kLayouts));
  const auto realigns = static_cast<std::int64_t>(std::size(detail::kAllFoldRealigns));
  const std::int64_t realign = index_of(detail::kAllFoldRealigns, detail::default_fold_realign());
  constexpr std::int64_t kAligned = 0, kStridePlus1 = 1, kAllDifferent = 5;
  for (const std::uint32_t w : kWorlds) {
    const auto world = static_cast<std::int64_t>(w);
    const std::int64_t vector_shape =
        index_of(detail::kAllFoldShapes, detail::default_fold_shape(detail::FoldPath::kVector, w));
    const std::int64_t shape = index_of(
        detail::kAllFoldShapes, detail::default_fold_shape(detail::FoldPath::kRealigned, w));
    b->Args({world, vector_shape, kAligned, realign});
    for (std::int64_t s = 0; s < shapes; ++s) {
      if (s != vector_shape) b->Args({world, s, kAligned, realign});
    }
    for (std::int64_t l = 1; l < layouts; ++l) b->Args({world, shape, l, realign});
    for (std::int64_t s = 0; s < shapes; ++s) {
      if (s != shape) b->Args({world, s, kStridePlus1, realign});
    }
    for (std::int64_t m = 0; m < realigns; ++m) {
      if (m == realign) continue;
      b->Args({world, shape, kStridePlus1, m});
      b->Args({world, shape, kAllDifferent, m});
    }
  }
  b->ArgNames({"W", "shape", "layout", "realign"});
}

BENCHMARK(BM_FoldVsCopy)
    ->Apply(fold_arguments)
    ->UseManualTime()
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond);

// bench_cuda's own context, beside the harness's.
void add_fold_context() {
  std::string shapes;
  for (const std::uint32_t world : kWorlds) {
    shapes += (shapes.empty() ? "" : ", ") + std::string("W=") + std::to_string(world) + ": " +
              detail::to_string(detail::default_fold_shape(detail::FoldPath::kVector, world)) +
              " / " +
              detail::to_string(detail::default_fold_shape(detail::FoldPath::kRealigned, world));
  }
  benchmark::AddCustomContext("fold_default_shape (vector / realigned)", shapes);
  benchmark::AddCustomContext("fold_default_realign",
                              detail::to_string(detail::default_fold_realign()));
  benchmark::AddCustomContext("slot_bytes", std::to_string(kSlotBytes));
}

}  // namespace
}  // namespace rv

int main(int argc, char** argv) {
  return rv::bench::run_cuda_benchmarks(argc, argv, "bench_cuda", rv::add_fold_context);
}
