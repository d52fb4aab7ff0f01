// Asking about GPUs is safe on any box: no throw, no crash, and a consistent answer.
#include "core/cuda/device_info.h"

#include <gtest/gtest.h>

namespace rv {
namespace {

TEST(DeviceInfo, AnswersOnAnyBox) {
  const CudaInfo info = cuda_info();
  EXPECT_GT(info.runtime_version, 0) << "the runtime is linked in and knows its version";
  EXPECT_EQ(cuda_device_present(), !info.gpus.empty()) << info.status;
  EXPECT_EQ(cuda_device_count(), static_cast<int>(info.gpus.size()));
  EXPECT_EQ(info.status == "ok", !info.gpus.empty()) << info.status;
  for (const GpuInfo& gpu : info.gpus) {
    EXPECT_FALSE(gpu.name.empty());
    EXPECT_GE(gpu.major, 7) << "CUDA 13 builds nothing older than sm_75";
    EXPECT_GT(gpu.memory_bytes, 0u);
    EXPECT_GT(gpu.multiprocessors, 0);
  }
}

TEST(DeviceInfo, VersionAndDescriptionText) {
  EXPECT_EQ(cuda_version_text(13000), "13.0");
  EXPECT_EQ(cuda_version_text(12080), "12.8");
  EXPECT_EQ(cuda_version_text(0), "none");
  GpuInfo gpu;
  gpu.name = "NVIDIA H200";
  gpu.major = 9;
  gpu.minor = 0;
  gpu.memory_bytes = std::size_t{150} * 1024 * 1024 * 1024;
  gpu.multiprocessors = 132;
  EXPECT_EQ(describe(gpu), "NVIDIA H200 (sm_90, 150.0 GiB, 132 SMs)");
}

}  // namespace
}  // namespace rv
