// The digest tree's leaves on the GPU equal the host reference's, bit for bit: sizes around
// a leaf, 4-byte offsets from a device allocation's alignment, and the vectors of
// docs/DESIGN.md §12.
#include "core/cuda/digest/digest_tree_kernel.h"

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

// The tree of a concatenation read in place from several device arrays: pieces that end
// inside a leaf, empty ones, ones at 4-byte but not 16-byte alignment, a leaf holding many.
TEST(DigestTreeCuda, PiecesEqualTheTreeOfTheirConcatenation) {
  RV_SKIP_WITHOUT_GPU();
  std::mt19937_64 random(21);
  const std::vector<std::vector<std::size_t>> layouts = {
      {4096},
      {4, 4092, 8192},
      {0, 1000, 0, 3000, 8},
      {16 << 20, 4 << 10, 40000, 16 << 20},
      std::vector<std::size_t>(700, 12),  // 8400 bytes: leaves of many pieces
  };
  for (const auto& sizes : layouts) {
    for (std::size_t offset : {0, 4}) {
      std::vector<std::uint8_t> all;
      std::vector<DeviceBuffer> buffers;
      std::vector<DigestPiece> pieces;
      for (std::size_t size : sizes) {
        std::vector<std::uint8_t> bytes(size);
        for (auto& byte : bytes) byte = static_cast<std::uint8_t>(random());
        all.insert(all.end(), bytes.begin(), bytes.end());
        buffers.emplace_back(0, offset + size);
        if (size != 0) buffers.back().upload(bytes.data(), size, offset);
        pieces.push_back({static_cast<std::uint8_t*>(buffers.back().data()) + offset, size});
      }
      const std::size_t leaves = tree_leaf_count(all.size());
      DeviceBuffer out(0, 16 * leaves + 1);
      launch_digest_tree_leaves_of_pieces(pieces.data(), pieces.size(), xxh3_default_secret(),
                                          static_cast<std::uint8_t*>(out.data()), nullptr);
      std::vector<std::uint8_t> host(16 * leaves);
      if (leaves != 0) out.download(host.data(), host.size());
      EXPECT_EQ(digest_tree_root(all.size(), host.data(), leaves).hex(),
                digest_tree(all.data(), all.size()).hex())
          << sizes.size() << " pieces, " << all.size() << " bytes, offset " << offset;
    }
  }
}

TEST(DigestTreeCuda, AMisalignedPieceIsNamed) {
  RV_SKIP_WITHOUT_GPU();
  DeviceBuffer input(0, 64), out(0, 16);
  const DigestPiece pieces[] = {{input.data(), 8},
                                {static_cast<std::uint8_t*>(input.data()) + 2, 8}};
  EXPECT_THROW(launch_digest_tree_leaves_of_pieces(pieces, 2, xxh3_default_secret(),
                                                   static_cast<std::uint8_t*>(out.data()), nullptr),
               InputError);
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
