// The digest tree's leaves (docs/DESIGN.md §12) hashed on the GPU where the tensor lives. The
// root is finished on the host (core/digest/digest_tree.h) from the 16-byte leaf digests. No
// CUDA types here.
//
// The tree is defined over one byte string; that string may be the concatenation of several
// device arrays (a model's parameters, an optimizer's state), read in place through a table
// of segments, so no concatenated copy is ever made.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rv {

// One piece of the byte string: `bytes` bytes of device memory at `address` (4-byte aligned,
// bytes a multiple of 4; a piece may be empty).
struct DigestPiece {
  const void* address;
  std::uint64_t bytes;
};

// Enqueues on `cuda_stream` (a cudaStream_t of the current device; nullptr for the default
// stream) the digests of the ⌈size / 4096⌉ leaves of `size` bytes at d_bytes (device memory,
// 4-byte aligned, size a multiple of 4; the last leaf zero-padded), written canonical, 16
// bytes per leaf, to d_leaves (device memory). `secret` is XXH3's 192-byte default secret
// (host memory; its words go to the kernel as an argument). Throws InputError on a misaligned
// pointer or size, RuntimeFailure when the launch fails.
void launch_digest_tree_leaves(const void* d_bytes, std::size_t size, const std::uint8_t* secret,
                               std::uint8_t* d_leaves, void* cuda_stream);

// The same over the concatenation of `count` pieces (the table in host memory; it is copied
// to the device in stream order, so the caller may free it on return): the leaves of their
// total size. Throws InputError naming the first misaligned piece.
void launch_digest_tree_leaves_of_pieces(const DigestPiece* pieces, std::size_t count,
                                         const std::uint8_t* secret, std::uint8_t* d_leaves,
                                         void* cuda_stream);

}  // namespace rv
