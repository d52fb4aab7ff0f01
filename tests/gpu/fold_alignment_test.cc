// The fold kernel at every alignment, bit for bit against core/fold.h's fold_stacked: every
// phase (0…3 floats into a 16-byte unit) of the output and of the table, every slot stride
// modulo 4 (so neighbouring slots sit at different phases), in place into slot 0, W ∈ {1, 2,
// 3, 4, 5, 8, 16} (batches of 2, 4 and 8 slots), shard lengths around the vector width and the
// edges (0, 1, 3, 4, 5), of a few warps (1000) and of many (2^16 + 7), sum and mean, on data
// holding NaNs, ±Inf, ±0 and subnormals; then every kernel shape under both realignments, and
// shards long enough for several sweeps of the grid. Outputs are poisoned before each launch and
// guard elements around them (and the gaps between slots, and the table's surroundings) hold poison
// too, so an element written twice, missed or written out of range, or a value read from outside
// its slot, shows up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/fixed_order/fold_kernel.h"
#include "core/fold.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using detail::FoldPath;
using detail::FoldRealign;
using detail::FoldShape;
using test::bits_of;
using test::from_bits;
using test::same_bits;

constexpr std::size_t kGuard = 8;                   // a whole number of float4s: phases survive
constexpr std::uint32_t kPoisonBits = 0xFFFFFFFFu;  // a NaN the fold never writes

// Slot r's values: the special distribution (±0, ±Inf, NaNs, subnormals) in every other
// slot, the order-sensitive ones in between, each slot from its own rank's stream; so a
// value taken from the wrong slot, the wrong element or in the wrong order changes bits.
std::vector<std::vector<float>> mixed_slots(std::uint32_t world, std::size_t n,
                                            std::uint64_t seed) {
  constexpr Distribution kBetween[] = {Distribution::kCancel, Distribution::kWide,
                                       Distribution::kNormal};
  std::vector<std::vector<float>> slots;
  for (std::uint32_t r = 0; r < world; ++r) {
    const Distribution dist = r % 2 == 0 ? Distribution::kSpecial : kBetween[(r / 2) % 3];
    slots.push_back(generate_arena(ArenaSpec{kLatestGenerator, dist, seed}, r, n));
  }
  return slots;
}

// The host image of a stacked table; gaps between slots hold poison.
std::vector<float> stack(const std::vector<std::vector<float>>& slots, std::size_t stride) {
  return test::stack_slots(slots, stride, from_bits(kPoisonBits));
}

bool holds(const std::vector<float>& actual, const float* expected) {
  return std::equal(actual.begin(), actual.end(), expected,
                    [](float a, float b) { return bits_of(a) == bits_of(b); });
}

bool all_poison(const std::vector<float>& values) {
  return std::all_of(values.begin(), values.end(),
                     [](float v) { return bits_of(v) == kPoisonBits; });
}

// One stacked table on the device at a chosen phase, between poison guards, folded into
// outputs at any phase (or in place) and checked against the CPU fold of the same table.
class DeviceTable {
 public:
  DeviceTable(std::vector<float> host, std::uint32_t world, std::size_t stride, std::size_t n,
              std::size_t phase)
      : host_(std::move(host)),
        world_(world),
        stride_(stride),
        n_(n),
        phase_(phase),
        table_(0, (2 * kGuard + phase + host_.size()) * sizeof(float)),
        out_(0, (2 * kGuard + 3 + n) * sizeof(float)) {
    table_.fill_bytes(0xFF);
    table_.upload_floats(host_, kGuard + phase_);
    for (Op op : {Op::kSum, Op::kMean}) {
      expected_.emplace_back(n_);
      fold_stacked(host_.data(), world_, stride_, n_, op, expected_.back().data());
    }
  }

  float* stacked() const { return table_.floats() + kGuard + phase_; }

  std::string describe(Op op, const std::string& where) const {
    return "W=" + std::to_string(world_) + " n=" + std::to_string(n_) +
           " stride=" + std::to_string(stride_) + " (mod 4: " + std::to_string(stride_ % 4) +
           ") table phase=" + std::to_string(phase_) + " " + where +
           " op=" + std::string(to_string(op));
  }

  // Folds into a fresh output `out_phase` floats past a 16-byte boundary; returns the path.
  FoldPath fold_out_of_place(std::size_t out_phase, Op op, std::optional<FoldShape> given,
                             FoldRealign realign) {
    out_.fill_bytes(0xFF);
    float* const out = out_.floats() + kGuard + out_phase;
    const FoldPath path = detail::fold_path(stacked(), world_, stride_, n_, out);
    const FoldShape shape = given.value_or(detail::default_fold_shape(path, world_));
    detail::launch_fold_stacked_shaped(stacked(), world_, stride_, n_, op, out, nullptr, shape,
                                       realign);
    const std::string where =
        "out phase=" + std::to_string(out_phase) + " shape=" + detail::to_string(shape) +
        " realign=" + detail::to_string(realign) + " path=" + detail::to_string(path);
    EXPECT_TRUE(same_bits(expected(op), out_.download_floats(n_, kGuard + out_phase)))
        << describe(op, where);
    EXPECT_TRUE(all_poison(out_.download_floats(kGuard + out_phase)) &&
                all_poison(out_.download_floats(kGuard + 3 - out_phase, kGuard + out_phase + n_)))
        << "wrote outside its output: " << describe(op, where);
    EXPECT_TRUE(table_intact(0)) << "wrote into the table: " << describe(op, where);
    return path;
  }

  // Folds into slot 0 itself. Leaves slot 0 holding the result: the last fold of a table.
  FoldPath fold_in_place(Op op, std::optional<FoldShape> given, FoldRealign realign) {
    const FoldPath path = detail::fold_path(stacked(), world_, stride_, n_, stacked());
    const FoldShape shape = given.value_or(detail::default_fold_shape(path, world_));
    detail::launch_fold_stacked_shaped(stacked(), world_, stride_, n_, op, stacked(), nullptr,
                                       shape, realign);
    const std::string where = "in place, shape=" + std::string(detail::to_string(shape)) +
                              " realign=" + detail::to_string(realign) +
                              " path=" + detail::to_string(path);
    EXPECT_TRUE(same_bits(expected(op), table_.download_floats(n_, kGuard + phase_)))
        << describe(op, where);
    EXPECT_TRUE(table_intact(n_)) << "wrote outside slot 0: " << describe(op, where);
    return path;
  }

 private:
  const std::vector<float>& expected(Op op) const { return expected_[op == Op::kSum ? 0 : 1]; }

  // The table from element `from` on (every slot's values and every gap's poison) and the
  // guards around it are as uploaded.
  bool table_intact(std::size_t from) const {
    const std::vector<float> rest =
        table_.download_floats(host_.size() - from, kGuard + phase_ + from);
    return holds(rest, host_.data() + from) &&
           all_poison(table_.download_floats(kGuard + phase_)) &&
           all_poison(table_.download_floats(kGuard, kGuard + phase_ + host_.size()));
  }

  std::vector<float> host_;
  std::uint32_t world_;
  std::size_t stride_;
  std::size_t n_;
  std::size_t phase_;
  DeviceBuffer table_;
  DeviceBuffer out_;
  std::vector<std::vector<float>> expected_;  // the CPU fold: sum, mean
};

// The path a layout must take: the float4 paths from 8 (aligned) or 16 (realigned) elements.
FoldPath expected_path(std::size_t n, std::uint32_t world, std::size_t stride,
                       std::size_t table_phase, std::size_t out_phase) {
  const bool aligned = table_phase == out_phase && (world == 1 || stride % 4 == 0);
  if (aligned) return n >= 8 ? FoldPath::kVector : FoldPath::kScalar;
  return n >= 16 ? FoldPath::kRealigned : FoldPath::kScalar;
}

class FoldAlignment : public ::testing::Test {
 protected:
  void SetUp() override { RV_SKIP_WITHOUT_GPU(); }
};

TEST_F(FoldAlignment, EveryPhaseOfOutputTableAndStrideMatchesCpuFold) {
  const std::optional<FoldShape> shape;  // the default for each path and W
  const FoldRealign realign = detail::default_fold_realign();
  std::set<FoldPath> paths;
  for (std::uint32_t world : {1u, 2u, 3u, 4u, 5u, 8u, 16u}) {
    for (std::size_t n : {0, 1, 3, 4, 5, 1000, (1 << 16) + 7}) {
      const auto slots = mixed_slots(world, n, 300 + world);
      // Strides n … n + 3: every residue modulo 4, the packed table (stride n) among them.
      for (std::size_t gap = 0; gap < 4; ++gap) {
        const std::size_t stride = n + gap;
        const std::vector<float> host = stack(slots, stride);
        for (std::size_t table_phase = 0; table_phase < 4; ++table_phase) {
          DeviceTable table(host, world, stride, n, table_phase);
          for (std::size_t out_phase = 0; out_phase < 4; ++out_phase) {
            for (Op op : {Op::kSum, Op::kMean}) {
              const FoldPath path = table.fold_out_of_place(out_phase, op, shape, realign);
              EXPECT_EQ(path, expected_path(n, world, stride, table_phase, out_phase))
                  << table.describe(op, "out phase=" + std::to_string(out_phase));
              paths.insert(path);
            }
          }
          const Op op = table_phase % 2 == 0 ? Op::kSum : Op::kMean;
          const FoldPath path = table.fold_in_place(op, shape, realign);
          EXPECT_EQ(path, expected_path(n, world, stride, table_phase, table_phase))
              << table.describe(op, "in place");
          paths.insert(path);
        }
      }
    }
  }
  EXPECT_EQ(paths.size(), 3u) << "the vector, the realigned and the scalar path must all run";
}

TEST_F(FoldAlignment, EveryShapeAndRealignmentMatchesCpuFold) {
  for (FoldShape shape : detail::kAllFoldShapes) {
    for (FoldRealign realign : detail::kAllFoldRealigns) {
      for (std::uint32_t world : {2u, 3u, 16u}) {
        // 16: the fewest the realigned path takes; 1000: a partial last warp; 2^16 + 7: with
        // a head of 4, exactly 2^14 units, so the last unit falls on a warp's last lane.
        for (std::size_t n : {16, 1000, (1 << 16) + 7}) {
          const auto slots = mixed_slots(world, n, 77);
          for (std::size_t gap : {1, 2, 3, 5}) {
            const std::vector<float> host = stack(slots, n + gap);
            for (std::size_t table_phase = 0; table_phase < 4; ++table_phase) {
              DeviceTable table(host, world, n + gap, n, table_phase);
              for (std::size_t out_phase = 0; out_phase < 4; ++out_phase) {
                const Op op = (out_phase + gap) % 2 == 0 ? Op::kSum : Op::kMean;
                table.fold_out_of_place(out_phase, op, shape, realign);
              }
              table.fold_in_place(Op::kMean, shape, realign);
            }
          }
        }
      }
    }
  }
}

TEST_F(FoldAlignment, LongShardsTakeSeveralGridStrides) {
  // Larger than one sweep of a resident grid (≈ SMs × 2048 threads × 4 floats × unroll).
  const std::size_t n = (std::size_t{1} << 23) + 3;
  const auto slots = mixed_slots(3, n, 9);
  for (FoldRealign realign : detail::kAllFoldRealigns) {
    DeviceTable shifted(stack(slots, n + 2), 3, n + 2, n, 1);
    EXPECT_EQ(shifted.fold_out_of_place(2, Op::kMean, std::nullopt, realign), FoldPath::kRealigned);
    // The live reducers' layout: packed slots (an odd stride here), in place.
    DeviceTable packed(stack(slots, n), 3, n, n, 0);
    EXPECT_EQ(packed.fold_in_place(Op::kSum, std::nullopt, realign), FoldPath::kRealigned);
  }
}

// The equality above could not fail if a slot read one element off gave the same bits on
// this data: show that folding with one slot shifted by a float (what a wrong phase in the
// realignment would do) gives other bits, while the kernel matches the true fold.
TEST_F(FoldAlignment, ComparisonCatchesASlotReadOneFloatOff) {
  const std::uint32_t world = 8;
  const std::size_t n = 1000, stride = n + 1;
  const std::vector<float> host = stack(mixed_slots(world, n, 5), stride);
  for (std::uint32_t shifted = 0; shifted < world; ++shifted) {
    std::vector<const float*> addends;
    for (std::uint32_t r = 0; r < world; ++r) {
      addends.push_back(host.data() + r * stride + (r == shifted ? 1 : 0));
    }
    std::vector<float> wrong(n - 1), right(n - 1);
    fold_ascending(addends.data(), world, n - 1, Op::kSum, wrong.data());
    fold_stacked(host.data(), world, stride, n - 1, Op::kSum, right.data());
    EXPECT_FALSE(same_bits(right, wrong)) << "slot " << shifted << " shifted by one float";
  }
  DeviceTable table(host, world, stride, n, 1);
  EXPECT_EQ(table.fold_out_of_place(3, Op::kSum, std::nullopt, detail::default_fold_realign()),
            FoldPath::kRealigned);
}

}  // namespace
}  // namespace rv
