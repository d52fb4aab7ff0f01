#include "core/digest/digest_tree.h"

#include <algorithm>
#include <cstring>
#include <vector>

#define XXH_INLINE_ALL  // header-only, as core/digest/digest.cc
#include <xxhash.h>

namespace rv {

static_assert(XXH_SECRET_DEFAULT_SIZE == 192, "xxh3_leaf.h is written for the 192-byte secret");

const std::uint8_t* xxh3_default_secret() { return XXH3_kSecret; }

Digest digest_tree_root(std::uint64_t size, const std::uint8_t* leaves, std::size_t count) {
  std::vector<std::uint8_t> bytes(8 + 16 * count);
  for (int i = 0; i < 8; ++i)
    bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(size >> (8 * i));
  if (count != 0) std::memcpy(bytes.data() + 8, leaves, 16 * count);
  return digest_bytes(bytes.data(), bytes.size());
}

Digest digest_tree(const void* bytes, std::size_t size) {
  const std::size_t count = tree_leaf_count(size);
  std::vector<std::uint8_t> leaves(16 * count), leaf(kTreeLeafBytes);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t begin = i * kTreeLeafBytes;
    const std::size_t length = std::min(kTreeLeafBytes, size - begin);
    std::memcpy(leaf.data(), static_cast<const std::uint8_t*>(bytes) + begin, length);
    std::memset(leaf.data() + length, 0, kTreeLeafBytes - length);
    const Digest digest = digest_bytes(leaf.data(), leaf.size());
    std::memcpy(leaves.data() + 16 * i, digest.canonical.data(), 16);
  }
  return digest_tree_root(size, leaves.data(), count);
}

}  // namespace rv
