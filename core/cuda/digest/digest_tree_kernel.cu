// Four threads per 4 KiB leaf. XXH3 keeps eight 64-bit accumulator lanes; thread p of a leaf
// owns lanes 2p and 2p + 1. Every step of XXH3's long loop stays inside such a pair (a
// stripe's word i feeds lanes i and i ^ 1, and the scramble is per lane), so the threads of a
// leaf never talk until the final merge adds their four terms (two shuffles). Each thread
// reads its 16 bytes of every 64-byte stripe: the four threads of a leaf read whole stripes,
// a warp eight 64-byte pieces, and every sector it fetches is used. A block of 16 stripes is
// loaded before it is hashed, so 256 bytes per thread are in flight.
//
// Where a leaf lies inside one segment at a 16-byte aligned address (every leaf of a tensor
// from PyTorch's allocator but the last), it is read with 16-byte loads; other leaves (the
// last one, those across segments or at other alignments) word by word through the segment
// table, words past the string's end reading as zero: the padding is never stored.
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.h"
#include "core/cuda/digest/digest_tree_kernel.h"
#include "core/digest/xxh3_leaf.h"
#include "core/error.h"

namespace rv {
namespace {

using xxh3_leaf::kBlockBytes;
using xxh3_leaf::kLeafBytes;
using xxh3_leaf::kSecretBytes;
using xxh3_leaf::kStripeBytes;
using xxh3_leaf::kStripesPerBlock;

constexpr unsigned kThreadsPerLeaf = 4;
constexpr unsigned kThreads = 256;
constexpr unsigned kLeavesPerBlock = kThreads / kThreadsPerLeaf;
constexpr unsigned kSecretWords = kSecretBytes - 7;
constexpr std::size_t kFullBlocks = (kLeafBytes - 1) / kBlockBytes;  // 3, each scrambled
constexpr std::size_t kTailStripes =
    ((kLeafBytes - 1) - kFullBlocks * kBlockBytes) / kStripeBytes;  // 15, then the last one
constexpr std::size_t kLastStripeSecret = kSecretBytes - kStripeBytes - 7;
constexpr std::size_t kScrambleSecret = kSecretBytes - kStripeBytes;
constexpr std::size_t kLowMergeSecret = 11;
constexpr std::size_t kHighMergeSecret = kSecretBytes - 64 - 11;
static_assert(kTailStripes + 1 == kStripesPerBlock, "a leaf's last block holds 16 stripes");

// A piece as the kernel sees it: `end` is the byte offset just past it in the concatenation
// (segment k covers [end of k − 1, end of k)).
struct DigestSegment {
  const void* address;
  std::uint64_t end;
};

struct SegmentTable {
  const DigestSegment* device;  // nullptr: the one segment `only`
  DigestSegment only;
  std::size_t count;

  __device__ DigestSegment at(std::size_t k) const { return device ? device[k] : only; }
  __device__ std::uint64_t start(std::size_t k) const { return k == 0 ? 0 : at(k - 1).end; }
  // The segment holding byte `offset` (< the string's size): the first whose end is past it.
  __device__ std::size_t find(std::uint64_t offset) const {
    std::size_t low = 0, high = count - 1;
    while (low < high) {
      const std::size_t mid = (low + high) / 2;
      if (at(mid).end > offset) {
        high = mid;
      } else {
        low = mid + 1;
      }
    }
    return low;
  }
};

struct LanePair {
  std::uint64_t even, odd;  // the stripe's words 2p and 2p + 1
};

// A leaf inside one segment, at a 16-byte aligned address; `words` is this thread's first 16.
struct AlignedLeaf {
  const uint4* words;
  __device__ LanePair operator()(std::size_t stripe_offset) const {
    const uint4 w = __ldg(words + stripe_offset / 16);
    return {w.x | (std::uint64_t{w.y} << 32), w.z | (std::uint64_t{w.w} << 32)};
  }
};

// Any other leaf: each 4-byte word looked up in the table.
struct GatheredLeaf {
  SegmentTable table;
  std::uint64_t size;
  std::uint64_t first;  // this thread's first byte: the leaf's start + 16p
  __device__ std::uint32_t word(std::uint64_t at) const {
    if (at >= size) return 0;
    const std::size_t k = table.find(at);
    const auto* bytes = static_cast<const unsigned char*>(table.at(k).address);
    return *reinterpret_cast<const std::uint32_t*>(bytes + (at - table.start(k)));
  }
  __device__ LanePair operator()(std::size_t stripe_offset) const {
    const std::uint64_t at = first + stripe_offset;
    return {word(at) | (std::uint64_t{word(at + 4)} << 32),
            word(at + 8) | (std::uint64_t{word(at + 12)} << 32)};
  }
};

__device__ inline void accumulate(std::uint64_t& even, std::uint64_t& odd, LanePair v,
                                  std::uint64_t secret_even, std::uint64_t secret_odd) {
  const std::uint64_t key_even = v.even ^ secret_even;
  const std::uint64_t key_odd = v.odd ^ secret_odd;
  even += v.odd;  // XXH3: acc[i ^ 1] += word i
  odd += v.even;
  even += (key_even & 0xFFFFFFFFULL) * (key_even >> 32);
  odd += (key_odd & 0xFFFFFFFFULL) * (key_odd >> 32);
}

__device__ inline std::uint64_t scrambled(std::uint64_t a, std::uint64_t secret) {
  a ^= a >> 47;
  a ^= secret;
  return a * xxh3_leaf::kPrime32_1;
}

// The leaf's (high, low) halves, the same on the four threads of the leaf. `secret` is the
// block's shared copy of the secret's words; `key` this thread's offset into it, 16p.
template <typename Load>
__device__ void hash_leaf(const Load& load, unsigned part, const std::uint64_t* secret,
                          std::uint64_t& high, std::uint64_t& low) {
  using namespace xxh3_leaf;
  std::uint64_t even = part == 0   ? kPrime32_3
                       : part == 1 ? kPrime64_2
                       : part == 2 ? kPrime64_4
                                   : kPrime64_5;
  std::uint64_t odd = part == 0   ? kPrime64_1
                      : part == 1 ? kPrime64_3
                      : part == 2 ? kPrime32_2
                                  : kPrime32_1;
  const unsigned key = 16 * part;
  LanePair v[kStripesPerBlock];
  for (std::size_t b = 0; b < kFullBlocks; ++b) {
#pragma unroll
    for (std::size_t s = 0; s < kStripesPerBlock; ++s) v[s] = load(b * kBlockBytes + s * 64);
#pragma unroll
    for (std::size_t s = 0; s < kStripesPerBlock; ++s) {
      accumulate(even, odd, v[s], secret[8 * s + key], secret[8 * s + key + 8]);
    }
    even = scrambled(even, secret[kScrambleSecret + key]);
    odd = scrambled(odd, secret[kScrambleSecret + key + 8]);
  }
#pragma unroll
  for (std::size_t s = 0; s < kTailStripes; ++s) v[s] = load(kFullBlocks * kBlockBytes + s * 64);
  v[kTailStripes] = load(kLeafBytes - kStripeBytes);
#pragma unroll
  for (std::size_t s = 0; s < kTailStripes; ++s) {
    accumulate(even, odd, v[s], secret[8 * s + key], secret[8 * s + key + 8]);
  }
  accumulate(even, odd, v[kTailStripes], secret[kLastStripeSecret + key],
             secret[kLastStripeSecret + key + 8]);
  low =
      mul128_fold64(even ^ secret[kLowMergeSecret + key], odd ^ secret[kLowMergeSecret + key + 8]);
  high = mul128_fold64(even ^ secret[kHighMergeSecret + key],
                       odd ^ secret[kHighMergeSecret + key + 8]);
}

__global__ void __launch_bounds__(kThreads)
    digest_leaves(SegmentTable table, std::uint64_t size, std::uint64_t leaves,
                  xxh3_leaf::SecretWords secret_argument, std::uint8_t* d_leaves) {
  __shared__ std::uint64_t secret[kSecretWords];
  for (unsigned i = threadIdx.x; i < kSecretWords; i += blockDim.x) {
    secret[i] = secret_argument.at[i];
  }
  __syncthreads();
  const std::uint64_t leaf =
      static_cast<std::uint64_t>(blockIdx.x) * kLeavesPerBlock + threadIdx.x / kThreadsPerLeaf;
  const unsigned part = threadIdx.x % kThreadsPerLeaf;
  std::uint64_t high = 0, low = 0;
  if (leaf < leaves) {  // every thread of a warp reaches the shuffles below
    const std::uint64_t begin = leaf * kLeafBytes;
    const std::size_t k = table.find(begin);
    const DigestSegment segment = table.at(k);
    const auto* at = static_cast<const unsigned char*>(segment.address) + (begin - table.start(k));
    if (segment.end >= begin + kLeafBytes && reinterpret_cast<std::uintptr_t>(at) % 16 == 0) {
      hash_leaf(AlignedLeaf{reinterpret_cast<const uint4*>(at) + part}, part, secret, high, low);
    } else {
      hash_leaf(GatheredLeaf{table, size, begin + 16 * part}, part, secret, high, low);
    }
  }
  // The four threads' merge terms, added (the merge's sum is modular: any order).
  high += __shfl_xor_sync(0xFFFFFFFFU, high, 1);
  low += __shfl_xor_sync(0xFFFFFFFFU, low, 1);
  high += __shfl_xor_sync(0xFFFFFFFFU, high, 2);
  low += __shfl_xor_sync(0xFFFFFFFFU, low, 2);
  if (leaf >= leaves || part != 0) return;
  constexpr std::uint64_t length = kLeafBytes;
  high = xxh3_leaf::avalanche(~(length * xxh3_leaf::kPrime64_2) + high);
  low = xxh3_leaf::avalanche(length * xxh3_leaf::kPrime64_1 + low);
  std::uint8_t* out = d_leaves + 16 * leaf;  // canonical: high then low, big-endian
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<std::uint8_t>(high >> (56 - 8 * i));
    out[8 + i] = static_cast<std::uint8_t>(low >> (56 - 8 * i));
  }
}

// The pool the segment tables come from: one per device, which keeps the memory freed into it.
// The device's default pool hands its memory back at every synchronisation, and taking it
// again costs host time at every step (a table a step for the parameters; docs/results.md,
// "Decisions behind the code"); these tables are a few hundred bytes to a few KB, so keeping
// them is free.
cudaMemPool_t table_pool() {
  int device = 0;
  RV_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex guard;
  static std::map<int, cudaMemPool_t> pools;  // never destroyed: they live as long as the process
  const std::lock_guard<std::mutex> lock(guard);
  const auto found = pools.find(device);
  if (found != pools.end()) return found->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  RV_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  std::uint64_t keep = UINT64_MAX;
  RV_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  pools.emplace(device, pool);
  return pool;
}

void launch(const SegmentTable& table, std::size_t size, const std::uint8_t* secret,
            std::uint8_t* d_leaves, void* cuda_stream) {
  const std::size_t leaves = (size + kLeafBytes - 1) / kLeafBytes;
  if (leaves == 0) return;
  const xxh3_leaf::SecretWords by_value = xxh3_leaf::secret_words(secret);  // a kernel argument
  const auto blocks = static_cast<unsigned>((leaves + kLeavesPerBlock - 1) / kLeavesPerBlock);
  digest_leaves<<<blocks, kThreads, 0, static_cast<cudaStream_t>(cuda_stream)>>>(
      table, size, leaves, by_value, d_leaves);
  RV_CUDA_CHECK_LAUNCH("digest_leaves");
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
  launch(SegmentTable{nullptr, DigestSegment{d_bytes, size}, 1}, size, secret, d_leaves,
         cuda_stream);
}

void launch_digest_tree_leaves_of_pieces(const DigestPiece* pieces, std::size_t count,
                                         const std::uint8_t* secret, std::uint8_t* d_leaves,
                                         void* cuda_stream) {
  std::vector<DigestSegment> segments(count);
  std::uint64_t size = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const auto address = reinterpret_cast<std::uintptr_t>(pieces[k].address);
    if (pieces[k].bytes % 4 != 0 || address % 4 != 0 ||
        (pieces[k].bytes != 0 && pieces[k].address == nullptr)) {
      throw InputError("the digest tree's kernel reads 4-byte words: piece " + std::to_string(k) +
                       " is " + std::to_string(pieces[k].bytes) + " bytes at an address " +
                       std::to_string(address % 4) + " bytes past 4-byte alignment");
    }
    size += pieces[k].bytes;
    segments[k] = DigestSegment{pieces[k].address, size};
  }
  if (size == 0) return;
  // The table goes to the device in stream order and is freed there after the kernel: the
  // caller's host table may go at once, and nothing waits.
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  void* d_table = nullptr;
  const std::size_t table_bytes = count * sizeof(DigestSegment);
  RV_CUDA_CHECK(cudaMallocFromPoolAsync(&d_table, table_bytes, table_pool(), stream));
  const cudaError_t copied =
      cudaMemcpyAsync(d_table, segments.data(), table_bytes, cudaMemcpyHostToDevice, stream);
  if (copied == cudaSuccess) {
    try {
      launch(SegmentTable{static_cast<const DigestSegment*>(d_table), DigestSegment{nullptr, 0},
                          count},
             size, secret, d_leaves, cuda_stream);
    } catch (...) {
      (void)cudaFreeAsync(d_table, stream);
      throw;
    }
  }
  (void)cudaFreeAsync(d_table, stream);
  RV_CUDA_CHECK(copied);
}

}  // namespace rv
