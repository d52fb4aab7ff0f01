#include "core/cuda/accumulator/accumulator_kernel.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "core/cuda/cuda_check.h"
#include "core/dtype_law.h"
#include "core/exact/exact_accumulator.h"
#include "core/exact/exact_law.h"

namespace rv {
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = static_cast<int>(exact::kBlock) / kThreads;  // 4
constexpr int kWarps = kThreads / 32;

struct Decision {
  int action;  // 0 add, 1 nothing to add, 2 the host takes the block
  int shift;
  int bottom;
};

// The scan of four elements a thread: the largest finite magnitude, the smallest magnitude
// less one (0 wraps to the largest), whether any is NaN, ±Inf or −0.
struct Scan {
  std::uint32_t largest = 0, smallest_less_one = 0xFFFFFFFFu, special = 0;

  __device__ void take(std::uint32_t bits) {
    const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
    const bool finite = magnitude < 0x7F800000u;
    largest = max(largest, finite ? magnitude : 0u);
    smallest_less_one = min(smallest_less_one, magnitude - 1u);
    special |= (!finite || bits == 0x80000000u) ? 1u : 0u;
  }
};

// A binary32 value as an integer multiple of 2^bottom (its bits, the block's bottom at or below
// its last bit): what the add puts into a digit.
__device__ __forceinline__ std::uint64_t scaled(std::uint32_t bits, int bottom) {
  const std::uint32_t exponent = (bits >> 23) & 0xFFu;
  std::uint64_t k = 0;
  if (exponent != 0xFFu) {
    const std::uint32_t significand = (bits & 0x7FFFFFu) | (exponent != 0 ? 0x800000u : 0u);
    const int position = (exponent == 0 ? 0 : static_cast<int>(exponent) - 1) - bottom;
    k = static_cast<std::uint64_t>(significand) << (position > 0 ? position : 0);
  }
  return (bits >> 31) != 0 ? 0 - k : k;
}

// Bits that hold the sum of `terms` values each below 2^m in magnitude: m + ⌈log2 terms⌉.
__device__ __forceinline__ int sum_bits(int m, std::size_t terms) {
  return m + (terms <= 1 ? 0 : 64 - __clzll(static_cast<long long>(terms - 1)));
}

// One CUDA block per accumulator block, adding `rows` rows of values (row r at values +
// r × row_stride) in one pass. The scan over every row (largest finite magnitude, smallest
// nonzero magnitude, any NaN/±Inf/−0) is reduced over the block; thread 0 applies the host's
// rule (ExactAccumulator::add) to all the rows at once: the window's new bottom, the shift of
// the digits, and whether the old digits and the rows' values, rows + 1 terms, stay below
// 2^62 (one row: the host's rule exactly); then every thread shifts its digits and adds its
// elements of every row, and the block reduces the OR of the new |digits|. A block the rule
// refuses is left untouched, all rows, for the host to take over. Row 0 stays in registers
// from the scan; the others are read again (from L1 or L2: a block's rows are 4 KiB each).
__global__ void __launch_bounds__(kThreads)
    add_kernel(DeviceAccumulatorState s, const float* __restrict__ values, std::size_t row_stride,
               std::size_t rows, std::size_t offset, std::size_t n) {
  const std::size_t local = static_cast<std::size_t>(blockIdx.x) * exact::kBlock;
  const std::size_t b = (offset + local) / exact::kBlock;
  const std::size_t c = min(static_cast<std::size_t>(exact::kBlock), n - local);
  const std::size_t elements =
      min(static_cast<std::size_t>(exact::kBlock), s.count - b * exact::kBlock);
  __shared__ std::uint32_t largest_of[kWarps], smallest_of[kWarps], special_of[kWarps];
  __shared__ unsigned long long any_of[kWarps];
  __shared__ Decision decision;
  if (s.residence[b] != kOnDevice) {
    if (threadIdx.x == 0) *s.host_needed = 1;
    return;
  }
  std::uint32_t bits[kPerThread];
  std::int64_t old[kPerThread];
  std::int64_t* digits = s.digits + b * exact::kBlock;
  // A block whose digits are all zero (the first add after clear) is not read: 8 bytes an
  // element less traffic for that add.
  const bool empty = s.magnitude_bits[b] == 0;
  Scan scan;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const std::size_t i = static_cast<std::size_t>(j) * kThreads + threadIdx.x;
    bits[j] = i < c ? __float_as_uint(values[local + i]) : 0u;
    // Loaded before the block's decision, so that the digits' latency hides under the scan.
    old[j] = !empty && i < elements ? digits[i] : 0;
    scan.take(bits[j]);
  }
  for (std::size_t r = 1; r < rows; ++r) {
    const float* row = values + r * row_stride + local;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const std::size_t i = static_cast<std::size_t>(j) * kThreads + threadIdx.x;
      scan.take(i < c ? __float_as_uint(row[i]) : 0u);
    }
  }
  std::uint32_t largest = scan.largest, smallest_less_one = scan.smallest_less_one,
                special = scan.special;
  for (int d = 16; d > 0; d /= 2) {
    largest = max(largest, __shfl_xor_sync(0xFFFFFFFFu, largest, d));
    smallest_less_one = min(smallest_less_one, __shfl_xor_sync(0xFFFFFFFFu, smallest_less_one, d));
    special |= __shfl_xor_sync(0xFFFFFFFFu, special, d);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    largest_of[warp] = largest;
    smallest_of[warp] = smallest_less_one;
    special_of[warp] = special;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kWarps; ++w) {
      largest = max(largest, largest_of[w]);
      smallest_less_one = min(smallest_less_one, smallest_of[w]);
      special |= special_of[w];
    }
    Decision d{1, 0, 0};
    if (special != 0) {
      d.action = 2;
    } else {
      if (largest != 0) {
        const int top = exact::top_position(exact::magnitude_of(largest));
        const int exponent = static_cast<int>((smallest_less_one + 1u) >> 23);
        const int lowest = exponent == 0 ? 0 : exponent - 1;
        const int old_bottom = s.bottom[b], old_bits = s.magnitude_bits[b];
        const int bottom = min(old_bottom, lowest);
        const int shift = old_bits == 0 ? 0 : old_bottom - bottom;
        const int needed =
            sum_bits(max(old_bits == 0 ? 0 : old_bits + shift, top - bottom + 1), rows + 1);
        if (needed > kDigitBits) {
          d.action = 2;  // the block is left as it was: the host adds the whole range again
        } else {
          d = Decision{0, shift, bottom};
          s.bottom[b] = bottom;
        }
      }
    }
    if (d.action == 2) {
      s.residence[b] = kToHost;
      *s.host_needed = 1;
    } else {
      s.covered[b] = max(s.covered[b], static_cast<std::uint32_t>(c));
    }
    decision = d;
  }
  __syncthreads();
  const Decision d = decision;
  if (d.action != 0) return;
  std::uint64_t sum[kPerThread];
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    sum[j] = (static_cast<std::uint64_t>(old[j]) << d.shift) + scaled(bits[j], d.bottom);
  }
  for (std::size_t r = 1; r < rows; ++r) {
    const float* row = values + r * row_stride + local;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const std::size_t i = static_cast<std::size_t>(j) * kThreads + threadIdx.x;
      if (i < c) sum[j] += scaled(__float_as_uint(row[i]), d.bottom);
    }
  }
  unsigned long long any = 0;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const std::size_t i = static_cast<std::size_t>(j) * kThreads + threadIdx.x;
    if (i >= elements) continue;
    digits[i] = static_cast<std::int64_t>(sum[j]);
    any |= static_cast<std::int64_t>(sum[j]) < 0 ? 0 - sum[j] : sum[j];
  }
  for (int w = 16; w > 0; w /= 2) any |= __shfl_xor_sync(0xFFFFFFFFu, any, w);
  if (lane == 0) any_of[warp] = any;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kWarps; ++w) any |= any_of[w];
    s.magnitude_bits[b] = any == 0 ? 0 : 64 - __clzll(static_cast<long long>(any));
  }
}

__global__ void export_kernel(DeviceAccumulatorState s, DeviceAccumulatorPlan p,
                              std::int64_t* __restrict__ words) {
  const std::size_t b = blockIdx.x;
  if (p.kind[b] != kOneLimb || s.residence[b] != kOnDevice) return;
  const std::size_t elements =
      min(static_cast<std::size_t>(exact::kBlock), s.count - b * exact::kBlock);
  std::int64_t* out = words + p.offset[b];
  // A block whose digits are all zero is not read: clear leaves its digits as they were.
  if (s.magnitude_bits[b] == 0) {
    for (std::size_t i = threadIdx.x; i < elements; i += kThreads) out[i] = 0;
    return;
  }
  const int shift = s.bottom[b] - p.bottom[b];
  const std::int64_t* digits = s.digits + b * exact::kBlock;
  for (std::size_t i = threadIdx.x; i < elements; i += kThreads) {
    out[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(digits[i]) << shift);
  }
}

// 2^k as a double, for −1022 ≤ k ≤ 1023.
__device__ __forceinline__ double power_of_two(int k) {
  return __longlong_as_double(static_cast<long long>(k + 1023) << 52);
}

// What the finish reads: the summed words of a plan (each block's kind, bottom and offset),
// or, in a world of one, this accumulator's own digits in place over its own bottoms (no plan:
// every block that lives on the device holds one digit an element, which is its own one-limb
// window; the blocks on the host are left to it).
struct FinishSource {
  DeviceAccumulatorPlan plan;
  const std::int64_t* summed = nullptr;  // nullptr: the own digits of `own`
  DeviceAccumulatorState own;

  // Block b's digits and bottom; false where the kernel leaves it to the host. *zero: every
  // result is +0 (the digits are not read).
  __device__ bool block(std::size_t b, const std::int64_t** in, int* bottom, bool* zero) const {
    if (summed != nullptr) {
      const std::uint8_t kind = plan.kind[b];
      if (kind == kSkip) return false;
      *zero = kind == kZero;
      *in = summed + plan.offset[b];
      *bottom = plan.bottom[b];
      return true;
    }
    if (own.residence[b] != kOnDevice) return false;
    *zero = own.magnitude_bits[b] == 0;  // zero digits, whatever clear left in their memory
    *in = own.digits + b * exact::kBlock;
    *bottom = own.bottom[b];
    return true;
  }
};

// A binary32 result as it is; a half one by the law's rounding straight to its format.
template <class F>
struct FinishOutput {
  using Element = std::uint16_t;
};
template <>
struct FinishOutput<Binary32Format> {
  using Element = float;
};

// F = Binary32Format: the results as floats. BFloat16Format, Float16Format: each exact sum (or
// mean) rounded once to the format by the law (exact::round_one_limb<F>, the host's rounding
// in core/exact/exact_accumulator.cc), never through binary32.
template <class F>
__global__ void finish_kernel(FinishSource source, std::size_t count, bool mean,
                              std::uint32_t divisor,
                              typename FinishOutput<F>::Element* __restrict__ out) {
  const std::size_t b = blockIdx.x;
  const std::int64_t* in = nullptr;
  int bottom = 0;
  bool zero = false;
  if (!source.block(b, &in, &bottom, &zero)) return;
  if (zero) bottom = 0;  // kNoBottom would make no power of two below; nothing is scaled
  const std::size_t elements =
      min(static_cast<std::size_t>(exact::kBlock), count - b * exact::kBlock);
  // As the host's exact_round (core/exact/host_exact.cc argues both): a digit sum below 2^51
  // is an exact double; scaled by a power of two (the sum, or the mean over 2^k) it is exact
  // and its conversion rounds once as the law does; divided by M × 2^(149 − bottom) it is the
  // correctly rounded quotient, whose conversion is the law's too (M ≤ 2^20). Wider sums take
  // the law itself.
  int k = 0;
  while ((std::uint32_t{1} << k) < divisor) ++k;
  const bool divided = mean && (std::uint32_t{1} << k) != divisor;
  const double factor = divided ? static_cast<double>(divisor) * power_of_two(149 - bottom)
                                : power_of_two(bottom - 149 - (mean ? k : 0));
  for (std::size_t i = threadIdx.x; i < elements; i += kThreads) {
    std::uint32_t r = 0;
    if (!zero) {
      const std::int64_t d = in[i];
      if (std::is_same_v<F, Binary32Format> && d > -(std::int64_t{1} << 51) &&
          d < (std::int64_t{1} << 51)) {
        const double v = static_cast<double>(d);  // exact
        r = __float_as_uint(
            __double2float_rn(divided ? __ddiv_rn(v, factor) : __dmul_rn(v, factor)));
      } else {
        r = exact::round_one_limb<F>(d, bottom, divisor, mean);
      }
    }
    if constexpr (std::is_same_v<F, Binary32Format>) {
      out[b * exact::kBlock + i] = __uint_as_float(r);
    } else {
      out[b * exact::kBlock + i] = static_cast<std::uint16_t>(r);
    }
  }
}

// finish_kernel<F> for `dtype` over `blocks` CUDA blocks.
void launch_finish(const FinishSource& source, std::size_t blocks, std::size_t count, bool mean,
                   std::uint32_t divisor, DType dtype, void* d_out, cudaStream_t stream) {
  const auto grid = static_cast<unsigned>(blocks);
  switch (dtype) {
    case DType::kF32:
      finish_kernel<Binary32Format>
          <<<grid, kThreads, 0, stream>>>(source, count, mean, divisor, static_cast<float*>(d_out));
      break;
    case DType::kBF16:
      finish_kernel<BFloat16Format><<<grid, kThreads, 0, stream>>>(
          source, count, mean, divisor, static_cast<std::uint16_t*>(d_out));
      break;
    case DType::kF16:
      finish_kernel<Float16Format><<<grid, kThreads, 0, stream>>>(
          source, count, mean, divisor, static_cast<std::uint16_t*>(d_out));
      break;
  }
}

__global__ void reset_bottoms_kernel(std::int32_t* bottom, std::size_t blocks) {
  for (std::size_t b = blockIdx.x * blockDim.x + threadIdx.x; b < blocks;
       b += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    bottom[b] = kNoBottom;
  }
}

}  // namespace

void launch_accumulator_reset_bottoms(std::int32_t* bottom, std::size_t blocks, void* cuda_stream) {
  if (blocks == 0) return;
  const auto grid = static_cast<unsigned>(std::min<std::size_t>((blocks + 255) / 256, 4096));
  reset_bottoms_kernel<<<grid, 256, 0, static_cast<cudaStream_t>(cuda_stream)>>>(bottom, blocks);
  RV_CUDA_CHECK_LAUNCH("accumulator reset_bottoms_kernel");
}

void launch_accumulator_add(const DeviceAccumulatorState& state, const float* d_values,
                            std::size_t row_stride, std::size_t rows, std::size_t offset,
                            std::size_t n, void* cuda_stream) {
  if (n == 0 || rows == 0) return;
  const auto blocks = static_cast<unsigned>((n + exact::kBlock - 1) / exact::kBlock);
  add_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(cuda_stream)>>>(
      state, d_values, row_stride, rows, offset, n);
  RV_CUDA_CHECK_LAUNCH("accumulator add_kernel");
}

void launch_accumulator_export(const DeviceAccumulatorState& state,
                               const DeviceAccumulatorPlan& plan, std::int64_t* d_words,
                               void* cuda_stream) {
  if (plan.blocks == 0) return;
  export_kernel<<<static_cast<unsigned>(plan.blocks), kThreads, 0,
                  static_cast<cudaStream_t>(cuda_stream)>>>(state, plan, d_words);
  RV_CUDA_CHECK_LAUNCH("accumulator export_kernel");
}

void launch_accumulator_finish(const DeviceAccumulatorPlan& plan, const std::int64_t* d_summed,
                               std::size_t count, bool mean, std::uint32_t divisor, DType dtype,
                               void* d_out, void* cuda_stream) {
  if (plan.blocks == 0) return;
  FinishSource source;
  source.plan = plan;
  source.summed = d_summed;
  launch_finish(source, plan.blocks, count, mean, divisor, dtype, d_out,
                static_cast<cudaStream_t>(cuda_stream));
  RV_CUDA_CHECK_LAUNCH("accumulator finish_kernel");
}

void launch_accumulator_finish_alone(const DeviceAccumulatorState& state, bool mean,
                                     std::uint32_t divisor, DType dtype, void* d_out,
                                     void* cuda_stream) {
  const std::size_t blocks = (state.count + exact::kBlock - 1) / exact::kBlock;
  if (blocks == 0) return;
  FinishSource source;
  source.own = state;
  launch_finish(source, blocks, state.count, mean, divisor, dtype, d_out,
                static_cast<cudaStream_t>(cuda_stream));
  RV_CUDA_CHECK_LAUNCH("accumulator finish_kernel (alone)");
}

}  // namespace rv
