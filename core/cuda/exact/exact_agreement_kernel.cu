// The agreement kernel: each exact block's three agreement words (the words of
// exact::widen_agreement, computed in 32-bit registers), one warp per block
// (exact_kernel_detail.h).
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/cuda/exact/exact_kernel_detail.h"
#include "core/exact/exact_law.h"
#include "core/fold_law.h"

namespace rv {
namespace {

using exact_kernel_detail::as_stream;
using exact_kernel_detail::check_pointer;
using exact_kernel_detail::grid_for;
using exact_kernel_detail::kThreads;
using exact_kernel_detail::kWarpsPerBlock;

// The agreement of one thread's elements in 32-bit registers, branch-free: for finite values
// the top bit position of |k| is monotone in |bits|, so the largest |bits| names the block's
// top (exact::top_position of it); the lowest set bit comes from each value's significand;
// NaN, ±Inf and −0 set the special flag. to_words turns it into exact::AgreementWords, the
// very words exact::widen_agreement gives (gpu_exact_kernel_test holds it to host_exact.cc).
struct LaneAgreement {
  std::uint32_t max_magnitude = 0;     // 0: no nonzero finite value
  std::uint32_t min_bottom = 0xFFFFu;  // above every position
  std::uint32_t special = 0;
};

// One element: a magnitude below Inf's is finite (zero gives 0 to the max and is kept out of
// the min), and the lowest set bit's position is the exponent's shift, max(e, 1) − 1, plus
// the trailing zeros of the magnitude with bit 23 forced on: for a normal that bit is the
// implicit one (so a zero fraction counts 23), and a subnormal has a set bit below it.
__device__ __forceinline__ void widen(LaneAgreement& a, std::uint32_t bits) {
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  const std::uint32_t finite = magnitude < 0x7F800000u ? magnitude : 0u;
  a.special |= static_cast<std::uint32_t>(magnitude >= 0x7F800000u) |
               static_cast<std::uint32_t>(bits == 0x80000000u);
  a.max_magnitude = max(a.max_magnitude, finite);
  const std::uint32_t bottom = max(magnitude >> 23, 1u) - 1u +
                               static_cast<std::uint32_t>(__clz(__brev(magnitude | 0x800000u)));
  a.min_bottom = min(a.min_bottom, finite != 0u ? bottom : 0xFFFFu);
}

__device__ __forceinline__ void widen(LaneAgreement& a, float4 v) {
  widen(a, float_bits(v.x));
  widen(a, float_bits(v.y));
  widen(a, float_bits(v.z));
  widen(a, float_bits(v.w));
}

__device__ __forceinline__ exact::AgreementWords to_words(const LaneAgreement& a) {
  exact::AgreementWords words;
  words.special = a.special;
  if (a.max_magnitude != 0) {
    words.top = exact::top_position(exact::magnitude_of(a.max_magnitude));
    words.bottom_complement = exact::kTopPosition - static_cast<int>(a.min_bottom);
  }
  return words;
}

// One full, aligned block's eight float4 per lane (a warp reads the block's 4 KiB at once).
__device__ __forceinline__ void load_block(const float* values, std::size_t b, int lane,
                                           float4 (&v)[8]) {
  const float4* block = reinterpret_cast<const float4*>(values + b * exact::kBlock);
#pragma unroll
  for (int j = 0; j < 8; ++j) v[j] = block[j * 32 + lane];
}

__device__ __forceinline__ void store_words(LaneAgreement mine, int lane, std::int64_t* words) {
  // The block's agreement: max, min and or over the warp, in five butterfly steps.
  for (int offset = 16; offset > 0; offset /= 2) {
    mine.max_magnitude =
        max(mine.max_magnitude, __shfl_xor_sync(0xFFFFFFFFu, mine.max_magnitude, offset));
    mine.min_bottom = min(mine.min_bottom, __shfl_xor_sync(0xFFFFFFFFu, mine.min_bottom, offset));
    mine.special |= __shfl_xor_sync(0xFFFFFFFFu, mine.special, offset);
  }
  if (lane == 0) {
    const exact::AgreementWords agreed = to_words(mine);
    words[0] = agreed.top;
    words[1] = agreed.bottom_complement;
    words[2] = agreed.special;
  }
}

// Full blocks of an aligned arena, one warp per block; each warp's loads of its next block
// are in flight while it reduces the current one, so the memory system never waits on the
// shuffles.
__global__ void __launch_bounds__(kThreads)
    agreement_full_blocks_kernel(const float* values, std::size_t full_blocks,
                                 std::int64_t* words) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * kWarpsPerBlock;
  std::size_t b = static_cast<std::size_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (b >= full_blocks) return;
  float4 v[8];
  load_block(values, b, lane, v);
  while (b < full_blocks) {
    const std::size_t next = b + warps;
    float4 v_next[8];
    if (next < full_blocks) load_block(values, next, lane, v_next);
    LaneAgreement mine;
#pragma unroll
    for (int j = 0; j < 8; ++j) widen(mine, v[j]);
    store_words(mine, lane, words + b * exact::kAgreementWords);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = v_next[j];
    b = next;
  }
}

// Six CUDA blocks of 256 threads (48 warps) per SM, where the SM holds that many threads:
// Turing (sm_75) holds 1024, and ptxas refuses a bound above it.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
constexpr int kManyWarpsBlocksPerSm = 4;
#else
constexpr int kManyWarpsBlocksPerSm = 6;
#endif

// Full blocks of an aligned arena, one per warp at a time, no prefetch, registers capped so
// that kManyWarpsBlocksPerSm CUDA blocks fit on an SM: latency hidden by many warps, not by
// registers. Prefetching the next block, or two blocks per warp, is slower: both hold twice
// the registers and so half the warps (docs/results.md, "Decisions behind the code").
__global__ void __launch_bounds__(kThreads, kManyWarpsBlocksPerSm)
    agreement_many_warps_kernel(const float* values, std::size_t full_blocks,
                                std::int64_t* words) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * kWarpsPerBlock;
  for (std::size_t b = static_cast<std::size_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
       b < full_blocks; b += warps) {
    const float4* block = reinterpret_cast<const float4*>(values + b * exact::kBlock);
    float4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = __ldcs(block + j * 32 + lane);
    LaneAgreement mine;
#pragma unroll
    for (int j = 0; j < 8; ++j) widen(mine, v[j]);
    store_words(mine, lane, words + b * exact::kAgreementWords);
  }
}

// Any block, scalar loads: a short last block, or an arena that is not 16-byte aligned.
__global__ void __launch_bounds__(kThreads)
    agreement_kernel(const float* values, std::size_t n, std::size_t first_block,
                     std::size_t blocks, std::int64_t* words) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * kWarpsPerBlock;
  for (std::size_t b = first_block + static_cast<std::size_t>(blockIdx.x) * kWarpsPerBlock +
                       threadIdx.x / 32;
       b < blocks; b += warps) {
    const std::size_t begin = b * exact::kBlock;
    const std::size_t count = min(static_cast<std::size_t>(exact::kBlock), n - begin);
    LaneAgreement mine;
    for (std::size_t i = lane; i < count; i += 32) widen(mine, float_bits(values[begin + i]));
    store_words(mine, lane, words + b * exact::kAgreementWords);
  }
}

}  // namespace

void launch_exact_agreement_words(const float* d_values, std::size_t n, std::int64_t* d_words,
                                  void* cuda_stream) {
  detail::launch_exact_agreement_words_with(d_values, n, d_words, cuda_stream,
                                            detail::default_agreement_loads());
}

namespace detail {

AgreementLoads default_agreement_loads() { return AgreementLoads::kManyWarps; }

const char* to_string(AgreementLoads loads) {
  switch (loads) {
    case AgreementLoads::kPrefetchNext:
      return "prefetch-next";
    case AgreementLoads::kManyWarps:
      return "many-warps";
  }
  return "unknown";
}

void launch_exact_agreement_words_with(const float* d_values, std::size_t n,
                                       std::int64_t* d_words, void* cuda_stream,
                                       AgreementLoads loads) {
  if (n == 0) return;
  check_pointer(d_values, "launch_exact_agreement_words", "the values");
  check_pointer(d_words, "launch_exact_agreement_words", "the words");
  const std::size_t blocks = exact_block_count(n);
  const auto stream = as_stream(cuda_stream);
  const bool aligned = reinterpret_cast<std::uintptr_t>(d_values) % 16 == 0;
  const std::size_t full_blocks = aligned ? n / exact::kBlock : 0;
  if (full_blocks != 0) {
    const auto kernel = loads == AgreementLoads::kPrefetchNext ? agreement_full_blocks_kernel
                                                               : agreement_many_warps_kernel;
    const unsigned grid = grid_for(kernel, (full_blocks + kWarpsPerBlock - 1) / kWarpsPerBlock);
    kernel<<<grid, kThreads, 0, stream>>>(d_values, full_blocks, d_words);
    RV_CUDA_CHECK_LAUNCH("agreement full-blocks kernel");
  }
  if (full_blocks < blocks) {
    const std::size_t rest = blocks - full_blocks;
    const unsigned grid = grid_for(agreement_kernel, (rest + kWarpsPerBlock - 1) / kWarpsPerBlock);
    agreement_kernel<<<grid, kThreads, 0, stream>>>(d_values, n, full_blocks, blocks, d_words);
    RV_CUDA_CHECK_LAUNCH("agreement_kernel");
  }
}

}  // namespace detail
}  // namespace rv
