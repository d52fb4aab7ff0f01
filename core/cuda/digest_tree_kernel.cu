// One thread per leaf: a leaf is 4 KiB, so a bucket of 25 MB is 6400 independent threads.
// Words are read as 32-bit loads (a tensor is only 4-byte aligned in general), and words past
// the tensor's end read as zero: the padding of the last leaf is never stored.
#include "core/cuda/digest_tree_kernel.h"

#include <cuda_runtime.h>

#include "core/cuda/cuda_check.h"
#include "core/digest/xxh3_leaf.h"
#include "core/error.h"

namespace rv {
namespace {

struct LeafLoad {
  const std::uint32_t* words;
  std::size_t word_count;  // of the whole tensor
  std::size_t first_word;  // of this leaf
  __device__ std::uint64_t operator()(std::size_t at) const {
    const std::size_t word = first_word + at / 4;
    const std::uint64_t low = word < word_count ? words[word] : 0;
    const std::uint64_t high = word + 1 < word_count ? words[word + 1] : 0;
    return low | (high << 32);
  }
};

__global__ void digest_leaves(const std::uint32_t* words, std::size_t word_count,
                              std::size_t leaves, xxh3_leaf::SecretWords secret,
                              std::uint8_t* d_leaves) {
  const std::size_t leaf = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (leaf >= leaves) return;
  const LeafLoad load{words, word_count, leaf * (xxh3_leaf::kLeafBytes / 4)};
  std::uint8_t canonical[16];
  xxh3_leaf::leaf_digest(load, secret, canonical);
  for (int i = 0; i < 16; ++i) d_leaves[16 * leaf + i] = canonical[i];
}

}  // namespace

void launch_digest_tree_leaves(const void* d_bytes, std::size_t size, const std::uint8_t* secret,
                               std::uint8_t* d_leaves, void* cuda_stream) {
  if (size % 4 != 0 || reinterpret_cast<std::uintptr_t>(d_bytes) % 4 != 0) {
    throw InputError("the digest tree's kernel reads 4-byte words: " + std::to_string(size) +
                     " bytes at an address " +
                     std::to_string(reinterpret_cast<std::uintptr_t>(d_bytes) % 4) +
                     " bytes past 4-byte alignment");
  }
  const std::size_t leaves = (size + xxh3_leaf::kLeafBytes - 1) / xxh3_leaf::kLeafBytes;
  if (leaves == 0) return;
  const xxh3_leaf::SecretWords by_value = xxh3_leaf::secret_words(secret);  // a kernel argument
  constexpr unsigned kThreads = 128;
  const auto blocks = static_cast<unsigned>((leaves + kThreads - 1) / kThreads);
  digest_leaves<<<blocks, kThreads, 0, static_cast<cudaStream_t>(cuda_stream)>>>(
      static_cast<const std::uint32_t*>(d_bytes), size / 4, leaves, by_value, d_leaves);
  RV_CUDA_CHECK_LAUNCH("digest_leaves");
}

}  // namespace rv
