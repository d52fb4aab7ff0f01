// The digest tree's leaves (docs/DESIGN.md §12) hashed on the GPU where the tensor lives: one
// thread per 4 KiB leaf running core/digest/xxh3_leaf.h, the same code the CPU test holds to
// xxHash. The root is finished on the host (core/digest/digest_tree.h) from the 16-byte leaf
// digests. No CUDA types here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rv {

// Enqueues on `cuda_stream` (a cudaStream_t of the current device; nullptr for the default
// stream) the digests of the ⌈size / 4096⌉ leaves of `size` bytes at d_bytes (device memory,
// 4-byte aligned, size a multiple of 4; the last leaf zero-padded), written canonical, 16
// bytes per leaf, to d_leaves (device memory). `secret` is XXH3's 192-byte default secret
// (host memory; its words go to the kernel as an argument). Throws InputError on a misaligned
// pointer or size, RuntimeFailure when the launch fails.
void launch_digest_tree_leaves(const void* d_bytes, std::size_t size, const std::uint8_t* secret,
                               std::uint8_t* d_leaves, void* cuda_stream);

}  // namespace rv
