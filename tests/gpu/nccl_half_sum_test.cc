// The NCCL transport's half-precision library sum (library_sum_half: ncclAllReduce with
// ncclBfloat16 / ncclFloat16) in a world of one: the sum of one rank is its input, every bit
// of it (NaNs of any payload, ±Inf, ±0, subnormals), for both dtypes; n = 0 returns at once;
// f32 is refused naming itself. A world of two is ci/device/multi-gpu-proof.sh's.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <vector>

#include "core/cuda/device_buffer.h"
#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/transport/nccl/nccl_library.h"
#include "core/transport/nccl/nccl_transport.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/scratch_dir.h"

namespace rv {
namespace {

using std::chrono::milliseconds;

class NcclHalfSum : public ::testing::Test {
 protected:
  void SetUp() override {
    RV_SKIP_WITHOUT_GPU();
    try {
      std::cout << "using " << NcclLibrary::load().describe() << "\n";
    } catch (const RuntimeFailure& e) {
      GTEST_SKIP() << "no NCCL on this box's loader path: " << e.what();
    }
  }
};

TEST_F(NcclHalfSum, AWorldOfOneSumsToItsInputInEitherDtype) {
  const test::ScratchDir dir;
  CudaFixedOrderDevice device(0);
  NcclConnectOptions options;
  options.job_dir = dir.path();
  options.job_nonce = "fedcba9876543210fedcba9876543210";
  options.rank = 0;
  options.world = 1;
  options.device = 0;
  options.timeout = milliseconds(60000);
  options.stream = device.stream();
  std::unique_ptr<Transport> nccl = connect_nccl(options);

  // Every 16-bit pattern but the NaNs: a sum of one addend is that addend, so NCCL returns
  // each bit pattern unchanged (NaN payloads are the library's to choose, and are checked
  // only to stay NaNs).
  constexpr std::size_t n = 65536;
  for (const DType dtype : {DType::kBF16, DType::kF16}) {
    const std::uint16_t exponent_mask = dtype == DType::kBF16 ? 0x7F80 : 0x7C00;
    std::vector<std::uint16_t> input(n);
    for (std::size_t i = 0; i < n; ++i) input[i] = static_cast<std::uint16_t>(i * 40503u);
    DeviceBuffer d(0, n * 2);
    d.upload(input.data(), n * 2);
    nccl->library_sum_half(d.data(), n, dtype);
    std::vector<std::uint16_t> output(n);
    d.download(output.data(), n * 2);
    std::size_t differing = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const bool nan = (input[i] & exponent_mask) == exponent_mask &&
                       (input[i] & ~(exponent_mask | 0x8000)) != 0;
      const bool out_nan = (output[i] & exponent_mask) == exponent_mask &&
                           (output[i] & ~(exponent_mask | 0x8000)) != 0;
      if (nan ? !out_nan : output[i] != input[i]) ++differing;
    }
    EXPECT_EQ(differing, 0u) << to_string(dtype);
    nccl->library_sum_half(d.data(), 0, dtype);  // nothing to sum
  }
  DeviceBuffer d(0, 16);
  EXPECT_THROW(nccl->library_sum_half(d.data(), 4, DType::kF32), InputError);
}

}  // namespace
}  // namespace rv
