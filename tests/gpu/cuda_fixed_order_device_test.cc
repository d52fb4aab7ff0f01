// CudaFixedOrderDevice keeps FixedOrderDevice's promises on a GPU: real scratch even for zero
// elements, copies in stream order, the fold and the library-sum finish with the host device's
// bits.
#include "core/cuda/fixed_order/cuda_fixed_order_device.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/arena.h"
#include "core/error.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using test::same_bits;

class CudaFixedOrderDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override { RV_SKIP_WITHOUT_GPU(); }
};

TEST_F(CudaFixedOrderDeviceTest, NamesItsDevice) {
  CudaFixedOrderDevice device(0);
  EXPECT_EQ(std::string(device.name()).rfind("cuda:0 ", 0), 0u) << device.name();
  EXPECT_NE(device.stream(), nullptr);
}

TEST_F(CudaFixedOrderDeviceTest, ScratchIsRealEvenForNoElements) {
  CudaFixedOrderDevice device(0);
  float* empty = device.allocate(0);
  EXPECT_NE(empty, nullptr);
  device.free(empty);
}

TEST_F(CudaFixedOrderDeviceTest, FoldAndFinishMatchTheHostDevice) {
  CudaFixedOrderDevice gpu(0);
  FixedOrderDevice& cpu = host_fixed_order_device();
  const std::uint32_t world = 5;
  const std::size_t n = 1001, stride = 1003;  // an odd stride: the scalar path
  std::vector<float> table(world * stride);
  for (std::uint32_t r = 0; r < world; ++r) {
    const auto slot = generate_arena(ArenaSpec{kLatestGenerator, Distribution::kSpecial, 4}, r, n);
    std::copy(slot.begin(), slot.end(), table.begin() + r * stride);
  }
  for (Op op : {Op::kSum, Op::kMean}) {
    float* d_table = gpu.allocate(table.size());
    float* d_copy = gpu.allocate(table.size());
    float* d_out = gpu.allocate(n);
    gpu.upload(d_table, table.data(), table.size() * sizeof(float));
    // Enqueued in order on one stream: the copy lands before the fold reads it.
    gpu.copy(d_copy, d_table, table.size() * sizeof(float));
    gpu.fold_stacked(d_copy, world, stride, n, op, d_out);
    std::vector<float> gpu_out(n);
    gpu.download(gpu_out.data(), d_out, n * sizeof(float));

    std::vector<float> cpu_out(n);
    cpu.fold_stacked(table.data(), world, stride, n, op, cpu_out.data());
    EXPECT_TRUE(same_bits(cpu_out, gpu_out)) << to_string(op);

    std::vector<float> finished = table;  // the library-sum finish, in place
    cpu.finish_library_sum(finished.data(), finished.size(), world, op);
    gpu.finish_library_sum(d_table, table.size(), world, op);
    gpu.synchronize();
    std::vector<float> gpu_finished(table.size());
    gpu.download(gpu_finished.data(), d_table, table.size() * sizeof(float));
    EXPECT_TRUE(same_bits(finished, gpu_finished)) << to_string(op);
    gpu.free(d_table);
    gpu.free(d_copy);
    gpu.free(d_out);
  }
}

// On any box: without a driver, or with one, device 4096 is a named error, not a crash.
TEST(CudaFixedOrderDevice, ABadDeviceIsANamedRuntimeFailure) {
  try {
    CudaFixedOrderDevice device(4096);
    FAIL() << "device 4096 should not exist";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA error"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rv
