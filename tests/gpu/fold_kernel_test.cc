// The fold kernel against core/fold.h's CPU fold, bit for bit: every distribution, raw
// special values, W from 1 to 256, shard lengths around the vector width, every alignment of
// table, stride and output (the vector, the realigned and the scalar path), every kernel
// shape. fold_alignment_test.cc holds the realigned path to every phase combination.
// Outputs are poisoned before each launch and guard elements around them must stay
// untouched, so an element written twice, missed or written out of range shows up.
#include "core/cuda/fixed_order/fold_kernel.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/error.h"
#include "core/fold.h"
#include "core/fold_law.h"
#include "core/fp_environment.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using detail::FoldPath;
using detail::FoldShape;
using test::bits_of;
using test::from_bits;
using test::same_bits;

constexpr std::size_t kGuard = 8;
constexpr std::uint32_t kPoisonBits = 0xFFFFFFFFu;  // a NaN the fold never writes

// Where one launch puts things: the table `table_offset` elements into its buffer, slots
// `stride` apart; the output in place (slot 0) or `out_offset` elements into its own buffer.
struct Layout {
  std::size_t table_offset = 0;
  std::size_t stride = 0;
  bool in_place = false;
  std::size_t out_offset = 0;
};

// The host image of a stacked table: slot r holds slots[r]; gaps between slots hold poison,
// so a read of a gap would put a NaN into the sum.
std::vector<float> stack(const std::vector<std::vector<float>>& slots, std::size_t stride) {
  return test::stack_slots(slots, stride, from_bits(kPoisonBits));
}

std::vector<float> cpu_fold(const std::vector<float>& table, std::uint32_t world,
                            std::size_t stride, std::size_t n, Op op) {
  std::vector<float> out(n);
  fold_stacked(table.data(), world, stride, n, op, out.data());
  return out;
}

struct GpuResult {
  std::vector<float> out;
  FoldPath path = FoldPath::kScalar;
  FoldShape shape = FoldShape::kBatch8Unroll1;
  bool guards_intact = true;
};

bool all_poison(const std::vector<float>& values) {
  for (float v : values) {
    if (bits_of(v) != kPoisonBits) return false;
  }
  return true;
}

// `shape`: the one launch_fold_stacked would pick when not given.
GpuResult gpu_fold(const std::vector<float>& table_host, std::uint32_t world, std::size_t n, Op op,
                   const Layout& layout, std::optional<FoldShape> shape = std::nullopt) {
  const int device = 0;
  DeviceBuffer table(device, (layout.table_offset + table_host.size() + kGuard) * sizeof(float));
  table.fill_bytes(0xFF);
  table.upload_floats(table_host, layout.table_offset);
  float* const stacked = table.floats() + layout.table_offset;
  DeviceBuffer out_buffer;
  float* out = stacked;
  if (!layout.in_place) {
    out_buffer = DeviceBuffer(device, (layout.out_offset + n + kGuard) * sizeof(float));
    out_buffer.fill_bytes(0xFF);
    out = out_buffer.floats() + layout.out_offset;
  }
  GpuResult result;
  result.path = detail::fold_path(stacked, world, layout.stride, n, out);
  result.shape = shape.value_or(detail::default_fold_shape(result.path, world));
  detail::launch_fold_stacked_shaped(stacked, world, layout.stride, n, op, out, nullptr,
                                     result.shape);
  if (layout.in_place) {
    result.out = table.download_floats(n, layout.table_offset);
    // Every other slot and the guards around the table are as uploaded.
    const std::vector<float> rest =
        table.download_floats(table_host.size() - n, layout.table_offset + n);
    result.guards_intact =
        std::equal(rest.begin(), rest.end(), table_host.begin() + static_cast<std::ptrdiff_t>(n),
                   [](float a, float b) { return bits_of(a) == bits_of(b); }) &&
        all_poison(table.download_floats(layout.table_offset)) &&
        all_poison(table.download_floats(kGuard, layout.table_offset + table_host.size()));
  } else {
    result.out = out_buffer.download_floats(n, layout.out_offset);
    result.guards_intact = all_poison(out_buffer.download_floats(layout.out_offset)) &&
                           all_poison(out_buffer.download_floats(kGuard, layout.out_offset + n));
  }
  return result;
}

std::vector<std::vector<float>> seeded_slots(Distribution dist, std::uint32_t world, std::size_t n,
                                             std::uint64_t seed) {
  std::vector<std::vector<float>> slots;
  for (std::uint32_t r = 0; r < world; ++r) {
    slots.push_back(generate_arena(ArenaSpec{kLatestGenerator, dist, seed}, r, n));
  }
  return slots;
}

std::size_t round_up4(std::size_t n) { return (n + 3) / 4 * 4; }

std::string describe(std::uint32_t world, std::size_t n, Op op, const Layout& layout) {
  return "W=" + std::to_string(world) + " n=" + std::to_string(n) +
         " op=" + std::string(to_string(op)) +
         " table_offset=" + std::to_string(layout.table_offset) +
         " stride=" + std::to_string(layout.stride) +
         (layout.in_place ? " in place" : " out_offset=" + std::to_string(layout.out_offset));
}

void expect_matches_cpu(const std::vector<std::vector<float>>& slots, Op op, const Layout& layout,
                        std::optional<FoldShape> shape = std::nullopt,
                        std::set<FoldPath>* paths = nullptr) {
  const auto world = static_cast<std::uint32_t>(slots.size());
  const std::size_t n = slots[0].size();
  const std::vector<float> table = stack(slots, layout.stride);
  const GpuResult gpu = gpu_fold(table, world, n, op, layout, shape);
  EXPECT_TRUE(same_bits(cpu_fold(table, world, layout.stride, n, op), gpu.out))
      << describe(world, n, op, layout) << " shape=" << detail::to_string(gpu.shape);
  EXPECT_TRUE(gpu.guards_intact) << "wrote outside its output: " << describe(world, n, op, layout);
  if (paths != nullptr) paths->insert(gpu.path);
}

class FoldKernelDistribution : public ::testing::TestWithParam<Distribution> {
 protected:
  void SetUp() override { RV_SKIP_WITHOUT_GPU(); }
};

TEST_P(FoldKernelDistribution, MatchesCpuFoldForWorldsUpTo256AndAnyLength) {
  const Distribution dist = GetParam();
  std::set<FoldPath> paths;
  for (std::uint32_t world : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 16u, 17u, 33u, 64u, 255u, 256u}) {
    for (std::size_t n : {0, 1, 3, 4, 5, 7, 8, 9, 1023, 4099}) {
      const auto slots = seeded_slots(dist, world, n, 1000 + world);
      for (Op op : {Op::kSum, Op::kMean}) {
        // Vector path: aligned table, whole-unit stride, separate aligned output.
        expect_matches_cpu(slots, op, Layout{0, round_up4(n), false, 0}, std::nullopt, &paths);
        // Realigned path (scalar below 16 elements): odd start, odd stride, output at yet
        // another phase.
        expect_matches_cpu(slots, op, Layout{1, n + 1, false, 2}, std::nullopt, &paths);
        // The live reducers' case: shard-length stride, in place into slot 0.
        expect_matches_cpu(slots, op, Layout{3, n, true, 0}, std::nullopt, &paths);
      }
    }
  }
  EXPECT_EQ(paths.size(), 3u) << "the vector, realigned and scalar paths must all have run";
}

INSTANTIATE_TEST_SUITE_P(EveryDistribution, FoldKernelDistribution,
                         ::testing::ValuesIn(kAllDistributions), [](const auto& param_info) {
                           return std::string(to_string(param_info.param));
                         });

class FoldKernel : public ::testing::Test {
 protected:
  void SetUp() override { RV_SKIP_WITHOUT_GPU(); }
};

TEST_F(FoldKernel, EveryAlignmentOfTableStrideAndOutput) {
  std::set<FoldPath> paths;
  for (std::uint32_t world : {1u, 2u, 3u, 8u}) {
    for (std::size_t n : {5, 9, 1023}) {
      const auto slots =
          seeded_slots(world % 2 ? Distribution::kWide : Distribution::kSpecial, world, n, 77);
      for (std::size_t table_offset = 0; table_offset < 4; ++table_offset) {
        for (std::size_t stride : {n, n + 1, n + 2, n + 3, round_up4(n), round_up4(n) + 4}) {
          expect_matches_cpu(slots, Op::kSum, Layout{table_offset, stride, true, 0}, std::nullopt,
                             &paths);
          for (std::size_t out_offset = 0; out_offset < 4; ++out_offset) {
            expect_matches_cpu(slots, Op::kMean, Layout{table_offset, stride, false, out_offset},
                               std::nullopt, &paths);
          }
        }
      }
    }
  }
  EXPECT_EQ(paths.size(), 3u);
}

TEST_F(FoldKernel, EveryShapeMatchesCpuFold) {
  for (FoldShape shape : detail::kAllFoldShapes) {
    for (std::uint32_t world : {1u, 2u, 5u, 8u, 9u, 16u, 256u}) {
      for (std::size_t n : {0, 1, 7, 4099}) {
        const auto slots = seeded_slots(Distribution::kCancel, world, n, 5);
        for (Op op : {Op::kSum, Op::kMean}) {
          expect_matches_cpu(slots, op, Layout{2, round_up4(n), false, 2}, shape);
          expect_matches_cpu(slots, op, Layout{0, n, true, 0}, shape);
        }
      }
    }
  }
}

TEST_F(FoldKernel, LongShardsTakeSeveralGridStrides) {
  // Larger than one sweep of a resident grid (≈ SMs × 2048 threads × 4 floats × unroll).
  const std::size_t n = (std::size_t{1} << 23) + 3;
  const auto slots = seeded_slots(Distribution::kNormal, 3, n, 9);
  expect_matches_cpu(slots, Op::kMean, Layout{1, round_up4(n), false, 1});  // vector, head 3
  expect_matches_cpu(slots, Op::kSum, Layout{0, n, true, 0});               // realigned
}

// Raw inputs: what the seeded distributions contain, spelled out, with the bits the
// contract demands where they are known without a fold.
TEST_F(FoldKernel, RawSpecialValuesBitForBit) {
  struct Case {
    std::vector<std::uint32_t> addends;  // one element, one addend per slot
    std::uint32_t expected_sum;
  };
  const std::uint32_t kMinSub = 0x00000001u, kNegMinSub = 0x80000001u;
  const std::uint32_t kMax = 0x7F7FFFFFu, kInf = 0x7F800000u, kNegInf = 0xFF800000u;
  const std::uint32_t kOne = 0x3F800000u, kHalfUlpOfOne = 0x33800000u;  // 2^-24
  const std::uint32_t kOnePlusUlp = 0x3F800001u;
  const std::vector<Case> cases = {
      {{0x80000000u, 0x80000000u}, 0x80000000u},               // −0 + −0 = −0
      {{0x80000000u, 0x00000000u}, 0x00000000u},               // −0 + +0 = +0
      {{0x80000000u, 0x80000000u, 0x80000000u}, 0x80000000u},  // no +0 start
      {{kInf, kNegInf}, kCanonicalNanBits},                    // inf − inf
      {{0x7FA00001u, kOne}, kCanonicalNanBits},                // signalling NaN
      {{0xFFC12345u, 0x00000000u}, kCanonicalNanBits},         // negative quiet NaN payload
      {{kOne, 0x7FC00001u, kInf}, kCanonicalNanBits},          // NaN then inf
      {{kMinSub, kMinSub}, 0x00000002u},                       // subnormals kept (no FTZ)
      {{kMinSub, kNegMinSub}, 0x00000000u},                    // exact cancellation: +0
      {{0x00400000u, 0x00400000u}, 0x00800000u},               // subnormal sum to the min normal
      {{kMax, kMax}, kInf},                                    // overflow
      {{kMax, kMax, 0xFF7FFFFFu}, kInf},                       // inf stays inf: order matters
      {{kOne, kHalfUlpOfOne}, kOne},                           // tie to even (down)
      {{kOnePlusUlp, kHalfUlpOfOne}, 0x3F800002u},             // tie to even (up)
      {{kHalfUlpOfOne, kHalfUlpOfOne, kOne}, 0x3F800001u},     // association: (a + b) + c
      {{kOne, kHalfUlpOfOne, kHalfUlpOfOne}, kOne},            // … not a + (b + c)
  };
  for (const Case& c : cases) {
    std::vector<std::vector<float>> slots;
    for (std::uint32_t bits : c.addends) slots.push_back({from_bits(bits)});
    const auto world = static_cast<std::uint32_t>(slots.size());
    for (const Layout& layout : {Layout{0, 4, false, 0}, Layout{1, 1, false, 3}}) {
      const std::vector<float> table = stack(slots, layout.stride);
      const GpuResult sum = gpu_fold(table, world, 1, Op::kSum, layout);
      EXPECT_EQ(bits_of(sum.out[0]), c.expected_sum)
          << std::hex << "addends[0]=0x" << c.addends[0] << " W=" << std::dec << world;
      EXPECT_TRUE(same_bits(cpu_fold(table, world, layout.stride, 1, Op::kMean),
                            gpu_fold(table, world, 1, Op::kMean, layout).out));
    }
  }
  // The mean of subnormals stays subnormal: 3 × min subnormal × (1/3) rounds to 1 ulp.
  const std::vector<std::vector<float>> tiny = {
      {from_bits(kMinSub)}, {from_bits(kMinSub)}, {from_bits(kMinSub)}};
  EXPECT_EQ(bits_of(gpu_fold(stack(tiny, 4), 3, 1, Op::kMean, Layout{0, 4, false, 0}).out[0]),
            bits_of(cpu_fold(stack(tiny, 4), 3, 4, 1, Op::kMean)[0]));
  EXPECT_NE(bits_of(cpu_fold(stack(tiny, 4), 3, 4, 1, Op::kMean)[0]), 0u)
      << "the CPU flushed a subnormal (FTZ " << read_fp_environment().flush_to_zero << ")";
}

// The equality above could not fail if the data were insensitive to order: show that a
// reversed fold gives other bits on this data, and that the kernel still matches ascending.
TEST_F(FoldKernel, ComparisonCatchesAReversedFold) {
  const std::uint32_t world = 8;
  const std::size_t n = 4099;
  const auto slots = seeded_slots(Distribution::kCancel, world, n, 3);
  std::vector<const float*> reversed;
  for (std::uint32_t r = world; r-- > 0;) reversed.push_back(slots[r].data());
  std::vector<float> descending(n);
  fold_ascending(reversed.data(), world, n, Op::kSum, descending.data());
  const std::vector<float> table = stack(slots, n);
  const GpuResult gpu = gpu_fold(table, world, n, Op::kSum, Layout{0, n, false, 0});
  EXPECT_TRUE(same_bits(cpu_fold(table, world, n, n, Op::kSum), gpu.out));
  EXPECT_FALSE(same_bits(descending, gpu.out));
}

// Argument checks happen before any CUDA call: these run on any box.
TEST(FoldKernelArguments, RejectsBadWorldsAndOverlaps) {
  auto* fake = reinterpret_cast<float*>(std::uintptr_t{1} << 20);
  EXPECT_THROW(launch_fold_stacked(fake, 0, 16, 16, Op::kSum, fake + 1000, nullptr), InputError);
  EXPECT_THROW(launch_fold_stacked(fake, 2, 16, 16, Op::kSum, fake + 1, nullptr), InputError);
  EXPECT_THROW(launch_fold_stacked(fake, 2, 16, 16, Op::kSum, fake + 16, nullptr), InputError)
      << "in place into slot 1 overwrites an addend another thread still reads";
  EXPECT_THROW(launch_fold_stacked(nullptr, 2, 16, 16, Op::kSum, fake, nullptr), InputError);
  EXPECT_NO_THROW(launch_fold_stacked(fake, 2, 16, 0, Op::kSum, fake + 1, nullptr))
      << "an empty shard launches nothing";
}

TEST(FoldKernelArguments, PathChoice) {
  auto* base = reinterpret_cast<float*>(std::uintptr_t{1} << 20);  // 16-byte aligned
  EXPECT_EQ(detail::fold_path(base, 4, 64, 64, base + 1024), FoldPath::kVector);
  EXPECT_EQ(detail::fold_path(base + 1, 4, 64, 64, base + 1025), FoldPath::kVector);
  EXPECT_EQ(detail::fold_path(base + 1, 4, 64, 64, base + 1024), FoldPath::kRealigned);
  EXPECT_EQ(detail::fold_path(base, 4, 65, 64, base + 1024), FoldPath::kRealigned);
  EXPECT_EQ(detail::fold_path(base, 1, 65, 64, base + 1024), FoldPath::kVector);
  EXPECT_EQ(detail::fold_path(base, 4, 64, 7, base + 1024), FoldPath::kScalar);
  EXPECT_EQ(detail::fold_path(base, 4, 65, 15, base + 1024), FoldPath::kScalar);
  EXPECT_EQ(detail::fold_path(base, 4, 65, 16, base + 1024), FoldPath::kRealigned);
  const auto* odd = reinterpret_cast<const float*>(reinterpret_cast<std::uintptr_t>(base) + 2);
  EXPECT_EQ(detail::fold_path(odd, 4, 64, 64, base + 1024), FoldPath::kScalar)
      << "a pointer that is not float-aligned has no aligned float4";
}

}  // namespace
}  // namespace rv
