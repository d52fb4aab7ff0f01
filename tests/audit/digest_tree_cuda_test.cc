// The digest tree's leaves on the GPU equal the host reference's, bit for bit: sizes around
// a leaf, 4-byte offsets from a device allocation's alignment, and the vectors of
// docs/DESIGN.md §12.
#include "core/cuda/digest_tree_kernel.h"

#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda/device_buffer.h"
#include "core/digest/digest_tree.h"
#include "core/error.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

Digest device_tree(const std::vector<std::uint8_t>& bytes, std::size_t offset) {
  DeviceBuffer input(0, offset + bytes.size());
  if (!bytes.empty()) input.upload(bytes.data(), bytes.size(), offset);
  const std::size_t leaves = tree_leaf_count(bytes.size());
  DeviceBuffer out(0, 16 * leaves);
  launch_digest_tree_leaves(static_cast<std::uint8_t*>(input.data()) + offset, bytes.size(),
                            xxh3_default_secret(), static_cast<std::uint8_t*>(out.data()), nullptr);
  std::vector<std::uint8_t> host(16 * leaves);
  if (leaves != 0) out.download(host.data(), host.size());
  return digest_tree_root(bytes.size(), host.data(), leaves);
}

TEST(DigestTreeCuda, LeavesEqualTheHostReference) {
  RV_SKIP_WITHOUT_GPU();
  std::mt19937_64 random(12);
  for (std::size_t size : {0, 4, 4092, 4096, 4100, 65536, 1000004, 25 << 20}) {
    std::vector<std::uint8_t> bytes(size);
    for (auto& byte : bytes) byte = static_cast<std::uint8_t>(random());
    const Digest expected = digest_tree(bytes.data(), size);
    for (std::size_t offset : {0, 4, 12}) {
      EXPECT_EQ(device_tree(bytes, offset).hex(), expected.hex())
          << size << " bytes at offset " << offset;
    }
  }
}

TEST(DigestTreeCuda, TheVectorsOfDesign12) {
  RV_SKIP_WITHOUT_GPU();
  std::vector<float> values(40000);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * static_cast<float>(i) - 3;
  std::vector<std::uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  EXPECT_EQ(device_tree(bytes, 0).hex(), "5a0dd7727998be68e632474851609da0");
}

TEST(DigestTreeCuda, AMisalignedTensorIsNamed) {
  RV_SKIP_WITHOUT_GPU();
  DeviceBuffer input(0, 64), out(0, 16);
  EXPECT_THROW(launch_digest_tree_leaves(static_cast<std::uint8_t*>(input.data()) + 2, 8,
                                         xxh3_default_secret(),
                                         static_cast<std::uint8_t*>(out.data()), nullptr),
               InputError);
}

}  // namespace
}  // namespace rv
