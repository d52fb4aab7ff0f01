// The library-sum finishing step on the device against core/fold.h's finish_library_sum,
// bit for bit, at every alignment and around the vector width.
#include "core/cuda/library_sum/finish_kernel.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/fold.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using test::bits_of;
using test::same_bits;

TEST(FinishKernel, MatchesCpuFinishAtEveryAlignment) {
  RV_SKIP_WITHOUT_GPU();
  constexpr std::size_t kGuard = 4;
  for (std::uint32_t world : {1u, 3u, 8u}) {
    for (std::size_t n : {0, 1, 3, 4, 5, 8, 9, 1023, 4099}) {
      const std::vector<float> values =
          generate_arena(ArenaSpec{kLatestGenerator, Distribution::kSpecial, 21}, world, n);
      for (Op op : {Op::kSum, Op::kMean}) {
        std::vector<float> expected = values;
        finish_library_sum(expected.data(), n, world, op);
        for (std::size_t offset = 0; offset < 4; ++offset) {
          DeviceBuffer buffer(0, (offset + n + kGuard) * sizeof(float));
          buffer.fill_bytes(0xFF);
          buffer.upload_floats(values, offset);
          launch_finish_library_sum(buffer.floats() + offset, n, world, op, nullptr);
          EXPECT_TRUE(same_bits(expected, buffer.download_floats(n, offset)))
              << "W=" << world << " n=" << n << " offset=" << offset;
          for (float guard : buffer.download_floats(kGuard, offset + n)) {
            EXPECT_EQ(bits_of(guard), 0xFFFFFFFFu) << "wrote past the end";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace rv
