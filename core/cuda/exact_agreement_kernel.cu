// The agreement kernel: each exact block's three agreement words (exact::widen_agreement,
// merged over a warp with exact::merge_agreement), one warp per block (exact_kernel_detail.h).
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/exact_kernel.h"
#include "core/cuda/exact_kernel_detail.h"
#include "core/exact/exact_law.h"
#include "core/fold_law.h"

namespace rv {
namespace {

using exact_kernel_detail::aligned_to;
using exact_kernel_detail::as_stream;
using exact_kernel_detail::check_pointer;
using exact_kernel_detail::grid_for;
using exact_kernel_detail::kThreads;
using exact_kernel_detail::kWarpsPerBlock;

__device__ __forceinline__ void widen(exact::AgreementWords& words, float4 v) {
  exact::widen_agreement(words, float_bits(v.x));
  exact::widen_agreement(words, float_bits(v.y));
  exact::widen_agreement(words, float_bits(v.z));
  exact::widen_agreement(words, float_bits(v.w));
}

__global__ void __launch_bounds__(kThreads)
    agreement_kernel(const float* values, std::size_t n, std::size_t blocks, std::int64_t* words) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * kWarpsPerBlock;
  for (std::size_t b = static_cast<std::size_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
       b < blocks; b += warps) {
    const std::size_t begin = b * exact::kBlock;
    const std::size_t count = min(static_cast<std::size_t>(exact::kBlock), n - begin);
    exact::AgreementWords mine;
    if (count == exact::kBlock && aligned_to(values, 16)) {
      const float4* block = reinterpret_cast<const float4*>(values + begin);
      float4 v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = block[j * 32 + lane];  // all 8 loads in flight
#pragma unroll
      for (int j = 0; j < 8; ++j) widen(mine, v[j]);
    } else {
      for (std::size_t i = lane; i < count; i += 32) {
        exact::widen_agreement(mine, float_bits(values[begin + i]));
      }
    }
    // The block's words: the maximum over the warp, in five butterfly steps.
    for (int offset = 16; offset > 0; offset /= 2) {
      exact::AgreementWords other;
      other.top = __shfl_xor_sync(0xFFFFFFFFu, static_cast<long long>(mine.top), offset);
      other.bottom_complement =
          __shfl_xor_sync(0xFFFFFFFFu, static_cast<long long>(mine.bottom_complement), offset);
      other.special = __shfl_xor_sync(0xFFFFFFFFu, static_cast<long long>(mine.special), offset);
      exact::merge_agreement(mine, other);
    }
    if (lane == 0) {
      std::int64_t* w = words + b * exact::kAgreementWords;
      w[0] = mine.top;
      w[1] = mine.bottom_complement;
      w[2] = mine.special;
    }
  }
}

}  // namespace

void launch_exact_agreement_words(const float* d_values, std::size_t n, std::int64_t* d_words,
                                  void* cuda_stream) {
  if (n == 0) return;
  check_pointer(d_values, "launch_exact_agreement_words", "the values");
  check_pointer(d_words, "launch_exact_agreement_words", "the words");
  const std::size_t blocks = exact_block_count(n);
  const unsigned grid = grid_for(agreement_kernel, (blocks + kWarpsPerBlock - 1) / kWarpsPerBlock);
  agreement_kernel<<<grid, kThreads, 0, as_stream(cuda_stream)>>>(d_values, n, blocks, d_words);
  RV_CUDA_CHECK_LAUNCH("agreement_kernel");
}

}  // namespace rv
