// The stacked kernel (launch_exact_reduce_stacked) against core/exact/exact_reduction.h's
// exact_reduce_stacked, bit for bit: every distribution, W from 1 to 2^20, lengths around the
// block size, both ops, slots packed and padded to odd strides (so their float4 loads fall
// back to scalar ones), into a separate output with guard words and in place into slot 0;
// blocks that mix specials, subnormals, overflow and cancellation with ordinary values; and
// sums beside float midpoints whose windows outgrow a double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/contract.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"
#include "tests/gpu/exact_kernel_test_support.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/midpoint_sums.h"

namespace rv {
namespace {

using test::at;
using test::download_output;
using test::kDevice;
using test::kGuard;
using test::kPoisonByte;
using test::Output;
using test::same_bits;
using test::upload_at;

// W slots of n values, `stride` apart, with a NaN in every gap between two slots.
std::vector<float> stack(const std::vector<std::vector<float>>& slots, std::size_t stride) {
  return test::stack_slots(slots, stride, test::from_bits(0xFFFFFFFFu));
}

std::vector<float> host_exact(const std::vector<float>& table, std::uint32_t world,
                              std::size_t stride, std::size_t n, Op op) {
  std::vector<float> out(n);
  exact_reduce_stacked(table.data(), world, stride, n, op, out.data());
  return out;
}

// The kernel into a separate, poisoned output (guards checked), and in place into slot 0.
void expect_equals_host(const std::vector<float>& table, std::uint32_t world, std::size_t stride,
                        std::size_t n, const std::string& what) {
  for (Op op : {Op::kSum, Op::kMean}) {
    const std::vector<float> expected = host_exact(table, world, stride, n, op);
    const std::string where = what + " " + std::string(to_string(op));

    const DeviceBuffer in = upload_at(table, 0);
    DeviceBuffer out(kDevice, (1 + n + kGuard) * sizeof(float));
    out.fill_bytes(kPoisonByte);
    launch_exact_reduce_stacked(at<float>(in, 0), world, stride, n, op, at<float>(out, 1), nullptr);
    const Output<float> separate = download_output<float>(out, 1, n);
    EXPECT_TRUE(same_bits(expected, separate.values)) << where << ", separate output";
    EXPECT_TRUE(separate.guards_intact) << where << ": results written out of range";

    const DeviceBuffer table_copy = upload_at(table, 0);
    launch_exact_reduce_stacked(at<float>(table_copy, 0), world, stride, n, op,
                                at<float>(table_copy, 0), nullptr);
    std::vector<float> whole(table.size());
    table_copy.download(whole.data(), whole.size() * sizeof(float));
    const std::vector<float> in_place(whole.begin(),
                                      whole.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_TRUE(same_bits(expected, in_place)) << where << ", in place";
    const std::vector<float> rest(whole.begin() + static_cast<std::ptrdiff_t>(n), whole.end());
    const std::vector<float> original_rest(table.begin() + static_cast<std::ptrdiff_t>(n),
                                           table.end());
    EXPECT_TRUE(same_bits(original_rest, rest)) << where << ": in place, other slots changed";
  }
}

std::string describe(Distribution dist, std::uint32_t world, std::size_t n, std::size_t stride) {
  std::ostringstream out;
  out << to_string(dist) << " W=" << world << " n=" << n << " stride=" << stride;
  return out.str();
}

TEST(ExactStackedKernel, EqualsHostOnEveryDistributionWorldAndLength) {
  RV_SKIP_WITHOUT_GPU();
  for (Distribution dist : kAllDistributions) {
    for (std::size_t n : {std::size_t{1}, std::size_t{1023}, std::size_t{1025},
                          std::size_t{3 * 1024 + 77}, std::size_t{1} << 16}) {
      for (std::uint32_t world : {1u, 2u, 3u, 5u, 8u, 64u}) {
        if (world == 64 && n > 4096) continue;  // the host's share of the test stays small
        const auto arenas = test::arenas_of(dist, world, n, 31 + n);
        for (std::size_t pad : {std::size_t{0}, std::size_t{3}}) {
          const std::size_t stride = n + pad;
          expect_equals_host(stack(arenas, stride), world, stride, n,
                             describe(dist, world, n, stride));
        }
      }
    }
  }
}

// The largest worlds: digits of 43 bits (W = 2^20) and sums as large as int64 allows, from
// the extreme values of the `wide` distribution repeated over every rank.
TEST(ExactStackedKernel, EqualsHostAtTheLargestWorlds) {
  RV_SKIP_WITHOUT_GPU();
  for (std::uint32_t world : {1000u, (1u << 20) - 1, 1u << 20}) {
    const std::size_t n = 3;
    std::vector<std::vector<float>> slots(world);
    for (std::uint32_t r = 0; r < world; ++r) {
      slots[r] = {std::numeric_limits<float>::max(), 0x1p-149f * static_cast<float>(1 + r % 7),
                  r % 2 == 0 ? 1.0f : -0x1.fffffep-1f};
    }
    expect_equals_host(stack(slots, n), world, n, n, "W=" + std::to_string(world));
  }
}

// Every block mixes a few special or extreme values into ordinary ones, so the same launch
// takes the one-limb path in some blocks and the general one in others, at every position of
// a pair and of a block.
TEST(ExactStackedKernel, EqualsHostOnBlocksThatMixSpecialsAndExtremes) {
  RV_SKIP_WITHOUT_GPU();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float extremes[] = {nan,
                            inf,
                            -inf,
                            -0.0f,
                            0.0f,
                            0x1p-149f,
                            -0x1p-140f,
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            0x1p-126f,
                            1e30f,
                            -1e-30f};
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::size_t n = 8 * exact::kBlock + 5;
  for (std::uint32_t world : {1u, 2u, 3u, 4u, 7u}) {
    std::vector<std::vector<float>> slots(world, std::vector<float>(n));
    for (auto& slot : slots) {
      for (float& value : slot) value = normal(random);
    }
    for (std::size_t b = 0; b < 8; b += 2) {  // blocks 0, 2, 4, 6 get extremes; 1, 3, 5, 7 not
      for (int k = 0; k < 6; ++k) {
        const std::size_t i = b * exact::kBlock + random() % exact::kBlock;
        slots[random() % world][i] = extremes[random() % std::size(extremes)];
      }
    }
    for (auto& slot : slots) slot[n - 1] = -0.0f;  // the short last block: every rank −0 → −0
    slots[world - 1][n - 2] = 0x1p-149f;
    expect_equals_host(stack(slots, n + 1), world, n + 1, n, "mixed W=" + std::to_string(world));
  }
}

// Sums beside float midpoints whose window grows bit by bit past a double's and a limb's
// width (tests/support/midpoint_sums.h): every element must come out as the host's whichever
// of the kernel's paths it takes.
TEST(ExactStackedKernel, EqualsHostBesideFloatMidpointsAtEveryWindowWidth) {
  RV_SKIP_WITHOUT_GPU();
  for (std::uint32_t world : {3u, 4u, 5u, 8u, 64u}) {
    const auto slots = test::slots_beside_float_midpoints(world);
    const std::size_t n = slots[0].size();
    expect_equals_host(stack(slots, n), world, n, n, "midpoints W=" + std::to_string(world));
  }
}

TEST(ExactStackedKernel, RejectsBadArguments) {
  float value = 0;
  EXPECT_THROW(launch_exact_reduce_stacked(&value, 0, 1, 1, Op::kSum, &value, nullptr), InputError);
  EXPECT_THROW(
      launch_exact_reduce_stacked(&value, exact::kMaxWorld + 1, 1, 1, Op::kSum, &value, nullptr),
      InputError);
  EXPECT_THROW(launch_exact_reduce_stacked(&value, 2, 1, 2, Op::kSum, &value, nullptr),
               InputError);  // a stride shorter than a slot
  EXPECT_THROW(launch_exact_reduce_stacked(nullptr, 1, 1, 1, Op::kSum, &value, nullptr),
               InputError);
  EXPECT_THROW(launch_exact_reduce_stacked(&value, 1, 1, 1, Op::kSum, nullptr, nullptr),
               InputError);
  EXPECT_NO_THROW(launch_exact_reduce_stacked(nullptr, 1, 0, 0, Op::kMean, nullptr, nullptr));
}

}  // namespace
}  // namespace rv
