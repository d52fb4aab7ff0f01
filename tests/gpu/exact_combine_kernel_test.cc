// The combine kernel (what the library's int64 all-reduce computes, for the loopback world)
// against a host loop: sums and maxima over 1 to 256 slots, vector and scalar strides,
// aligned and unaligned tables, in place into slot 0, and a zero stride.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "core/cuda/device_buffer.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/transport/transport.h"
#include "tests/gpu/exact_kernel_test_support.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using test::at;
using test::download_output;
using test::kDevice;
using test::kGuard;
using test::kPoisonByte;
using test::kWorlds;
using test::Output;
using test::same_words;
using test::upload_at;

std::vector<std::int64_t> host_combine(const std::vector<std::int64_t>& stacked,
                                       std::uint32_t slots, std::size_t stride, std::size_t n,
                                       IntReduction op) {
  std::vector<std::int64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t acc = stacked[i];
    for (std::uint32_t r = 1; r < slots; ++r) {
      const std::int64_t v = stacked[r * stride + i];
      acc = op == IntReduction::kMax ? std::max(acc, v) : acc + v;
    }
    out[i] = acc;
  }
  return out;
}

TEST(ExactKernel, CombinesWordsLikeTheLibrary) {
  RV_SKIP_WITHOUT_GPU();
  std::mt19937_64 random(3);
  for (std::uint32_t slots : kWorlds) {
    for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{1023}, std::size_t{100003}}) {
      // An even stride (the vector path) and an odd one (scalar); a table at an odd offset.
      for (std::size_t stride : {n + n % 2, n + 1 + n % 2}) {
        for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
          std::vector<std::int64_t> stacked((slots - 1) * stride + n);
          for (auto& v : stacked) {
            v = static_cast<std::int64_t>(random() % (std::uint64_t{1} << 53)) -
                (std::int64_t{1} << 52);  // 256 of them sum well inside int64
          }
          for (IntReduction op : {IntReduction::kSum, IntReduction::kMax}) {
            const auto expected = host_combine(stacked, slots, stride, n, op);
            const DeviceBuffer table = upload_at(stacked, offset);
            DeviceBuffer out(kDevice, (offset + n + kGuard) * sizeof(std::int64_t));
            out.fill_bytes(kPoisonByte);
            launch_combine_words(at<std::int64_t>(table, offset), slots, stride, n, op,
                                 at<std::int64_t>(out, offset), nullptr);
            const auto gpu = download_output<std::int64_t>(out, offset, n);
            EXPECT_TRUE(same_words(expected, gpu.values))
                << "slots=" << slots << " n=" << n << " stride=" << stride << " offset=" << offset
                << (op == IntReduction::kMax ? " max" : " sum");
            EXPECT_TRUE(gpu.guards_intact);
            // In place into slot 0, as the loopback world does.
            launch_combine_words(at<std::int64_t>(table, offset), slots, stride, n, op,
                                 at<std::int64_t>(table, offset), nullptr);
            const auto in_place = download_output<std::int64_t>(table, offset, n);
            EXPECT_TRUE(same_words(expected, in_place.values)) << "in place, slots=" << slots;
          }
        }
      }
    }
  }
}

// A zero stride adds slot 0 to itself: W identical ranks (the reducer test's transport).
TEST(ExactKernel, ZeroStrideMultipliesBySlots) {
  RV_SKIP_WITHOUT_GPU();
  const std::vector<std::int64_t> words = {0, 1, -1, 5, -(std::int64_t{1} << 40), 7};
  const DeviceBuffer buffer = upload_at(words, 0);
  launch_combine_words(at<std::int64_t>(buffer, 0), 3, 0, words.size(), IntReduction::kSum,
                       at<std::int64_t>(buffer, 0), nullptr);
  const auto gpu = download_output<std::int64_t>(buffer, 0, words.size());
  std::vector<std::int64_t> expected;
  for (std::int64_t w : words) expected.push_back(3 * w);
  EXPECT_TRUE(same_words(expected, gpu.values));
}

}  // namespace
}  // namespace rv
