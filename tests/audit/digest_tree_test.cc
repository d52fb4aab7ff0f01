// The digest tree (docs/DESIGN.md §12): the host/device leaf function equals xxHash's
// XXH3-128 on the same 4 KiB, and the C++ tree gives DESIGN §12's vectors (the Python
// reference's, tests/python/test_trail.py).
#include "core/digest/digest_tree.h"

#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/digest/xxh3_leaf.h"

namespace rv {
namespace {

std::string leaf_hex(const std::vector<std::uint8_t>& leaf) {
  std::uint8_t canonical[16];
  const auto load = [&](std::size_t at) {
    std::uint64_t value;
    std::memcpy(&value, leaf.data() + at, 8);
    return value;
  };
  xxh3_leaf::leaf_digest(load, xxh3_leaf::secret_words(xxh3_default_secret()), canonical);
  Digest digest;
  std::memcpy(digest.canonical.data(), canonical, 16);
  return digest.hex();
}

TEST(DigestTree, TheLeafFunctionIsXxh3) {
  std::mt19937_64 random(20);
  std::vector<std::uint8_t> leaf(kTreeLeafBytes, 0);
  EXPECT_EQ(leaf_hex(leaf), digest_bytes(leaf.data(), leaf.size()).hex());
  for (int trial = 0; trial < 8; ++trial) {
    for (auto& byte : leaf) byte = static_cast<std::uint8_t>(random());
    EXPECT_EQ(leaf_hex(leaf), digest_bytes(leaf.data(), leaf.size()).hex()) << trial;
  }
}

std::vector<float> vector_values(std::size_t n) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = 0.5f * static_cast<float>(i) - 3.0f;
  return values;
}

TEST(DigestTree, TheVectorsOfDesign12) {
  const std::pair<std::size_t, const char*> vectors[] = {
      {0, "2c0a8a99dc147d5445c3b49d035665b2"},     {1, "4cc9408cc93d6d790b59d4ce1e193fdf"},
      {1024, "dc3d1ea93446b155b25180307ededacc"},  {1025, "65e3954a623844e964c16c67e3953d71"},
      {40000, "5a0dd7727998be68e632474851609da0"},
  };
  for (const auto& [n, expected] : vectors) {
    const std::vector<float> values = vector_values(n);
    EXPECT_EQ(digest_tree(values.data(), n * sizeof(float)).hex(), expected) << n;
  }
}

}  // namespace
}  // namespace rv
