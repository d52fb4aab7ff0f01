// The digest tree (docs/DESIGN.md §12): the host/device leaf function equals xxHash's
// XXH3-128 on the same 64 KiB, and the C++ tree gives DESIGN §12's vectors (the Python
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
  xxh3_leaf::leaf_digest(load, xxh3_default_secret(), canonical);
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
      {0, "2c0a8a99dc147d5445c3b49d035665b2"},     {1, "98f4c5d27c9a6a70d2b29a5f63b2c043"},
      {16384, "85e7d72d6ef577296d09363c3376469e"}, {16385, "1f8616245811c7a8435731ec936a0c3e"},
      {40000, "3f1ff8b33371a71acc3486ebe8999513"},
  };
  for (const auto& [n, expected] : vectors) {
    const std::vector<float> values = vector_values(n);
    EXPECT_EQ(digest_tree(values.data(), n * sizeof(float)).hex(), expected) << n;
  }
}

}  // namespace
}  // namespace rv
