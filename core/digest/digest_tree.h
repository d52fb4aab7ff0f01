// The digest tree of docs/DESIGN.md §12: a tensor's bytes in zero-padded 4 KiB leaves, each
// hashed with XXH3-128, and a root over the byte count and the leaves. The leaves are
// independent, so a device hashes them where the tensor lives
// (core/cuda/digest/digest_tree_kernel.h) and only the 16-byte leaf digests cross to the host,
// where digest_tree_root finishes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/digest/digest.h"

namespace rv {

constexpr std::size_t kTreeLeafBytes = 4096;

// XXH3's default secret (192 bytes), for a device that runs core/digest/xxh3_leaf.h.
const std::uint8_t* xxh3_default_secret();

// How many leaves `size` bytes make (⌈size / 4096⌉).
inline std::size_t tree_leaf_count(std::uint64_t size) {
  return static_cast<std::size_t>((size + kTreeLeafBytes - 1) / kTreeLeafBytes);
}

// The root over `count` canonical 16-byte leaf digests of a tensor of `size` bytes.
Digest digest_tree_root(std::uint64_t size, const std::uint8_t* leaves, std::size_t count);

// The whole tree on the host (the reference): `size` bytes at `bytes`.
Digest digest_tree(const void* bytes, std::size_t size);

}  // namespace rv
