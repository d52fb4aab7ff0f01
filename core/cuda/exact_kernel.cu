// The exact contract's kernels. The element laws are exact_law.h's, inlined into the device
// code; only the mapping of elements to threads is written here.
//
// Mapping. The agreement kernel gives each exact block (1024 elements) to one warp: every lane
// loads 8 float4s (the whole block is in flight at once), widens its own words, and five
// shuffles max-combine them (merge_agreement) into the block's three words. The encode and
// round kernels give each exact block to one CUDA block of 256 threads, grid-striding over
// the blocks (a grid of the resident size): thread t owns the element pairs 2t and 512 + 2t,
// so every warp-wide load and store is one contiguous span (floats as float2: 256 bytes per
// warp, digits as longlong2: 512 bytes per warp) in the common one-limb case, and limb j of
// a multi-limb block, limb-major as on the host, is one such span too. A pair falls back to
// scalar accesses only where the buffer does not allow the vector (an unaligned pointer, an
// odd-sized last block's upper limbs, the end of the block).
//
// The encode and the round each come in two kernels: one for one-limb blocks without
// specials (the common case: one digit, exact::round_one_limb) and one for the rest (every
// limb and the special words; add_shifted over the limbs and round_exact_sum), launched only
// when the plan has such blocks, so the general path costs the common one no registers and
// the common encode can be instantiated per limb width (a compile-time divisor) cheaply.
#include "core/cuda/exact_kernel.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "core/cuda/cuda_check.h"
#include "core/cuda/launch_grid.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/fold_law.h"

namespace rv {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
// Element pairs per thread in the encode and round kernels: 2 × 256 × 2 = one exact block.
constexpr int kPairs = static_cast<int>(exact::kBlock) / (2 * kThreads);
static_assert(kPairs * 2 * kThreads == static_cast<int>(exact::kBlock),
              "the encode and round kernels cover one exact block per CUDA block");
static_assert(exact::kBlock == 32 * 8 * 4, "the agreement kernel gives a warp 8 float4s a lane");

using detail::MeanDivision;
using detail::Reciprocal;

__device__ __forceinline__ bool aligned_to(const void* p, std::uintptr_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// Loads elements p[0], p[1] as bits (those at or past `left` read as 0: they are never used).
__device__ __forceinline__ void load_pair(const float* p, std::size_t left, std::uint32_t bits[2]) {
  if (left >= 2 && aligned_to(p, 8)) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    bits[0] = float_bits(v.x);
    bits[1] = float_bits(v.y);
  } else {
    bits[0] = float_bits(p[0]);
    bits[1] = left >= 2 ? float_bits(p[1]) : 0u;
  }
}

__device__ __forceinline__ void load_pair(const std::int64_t* p, std::size_t left,
                                          std::int64_t words[2]) {
  if (left >= 2 && aligned_to(p, 16)) {
    const longlong2 v = *reinterpret_cast<const longlong2*>(p);
    words[0] = v.x;
    words[1] = v.y;
  } else {
    words[0] = p[0];
    words[1] = left >= 2 ? p[1] : 0;
  }
}

__device__ __forceinline__ void store_pair(std::int64_t* p, std::size_t left, std::int64_t a,
                                           std::int64_t b) {
  if (left >= 2 && aligned_to(p, 16)) {
    *reinterpret_cast<longlong2*>(p) = make_longlong2(a, b);
  } else {
    p[0] = a;
    if (left >= 2) p[1] = b;
  }
}

__device__ __forceinline__ void store_pair(float* p, std::size_t left, std::uint32_t a,
                                           std::uint32_t b) {
  if (left >= 2 && aligned_to(p, 8)) {
    *reinterpret_cast<float2*>(p) = make_float2(float_from_bits(a), float_from_bits(b));
  } else {
    p[0] = float_from_bits(a);
    if (left >= 2) p[1] = float_from_bits(b);
  }
}

// ---- Agreement ---------------------------------------------------------------------------

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

// ---- Encode ------------------------------------------------------------------------------

// A block the one-limb kernels take: at most one limb and no special words.
__host__ __device__ __forceinline__ bool one_limb_slot(const ExactBlockSlot& slot) {
  return slot.limbs <= 1 && slot.special == 0;
}

// Blocks of exactly one limb and no specials (the common case): one digit per element.
// kLimbBits > 0: the plan's limb width as a compile-time constant (exact::digits_of is
// inlined, so its division of the bit offset by the width becomes a multiply and a shift
// instead of a 32-bit division routine); 0: read from the plan at run time. Blocks without
// words (no limbs, no specials) are skipped; the rest are left to the general kernel.
template <int kLimbBits>
__global__ void __launch_bounds__(kThreads)
    encode_one_limb_kernel(const float* values, ExactPlanView plan, std::int64_t* words) {
  const int limb_bits = kLimbBits > 0 ? kLimbBits : plan.limb_bits;
  for (std::size_t b = blockIdx.x; b < plan.block_count; b += gridDim.x) {
    const ExactBlockSlot slot = plan.blocks[b];
    if (slot.limbs != 1 || slot.special != 0) continue;
    const std::size_t count =
        min(static_cast<std::size_t>(exact::kBlock), plan.count - b * exact::kBlock);
    const float* x = values + b * exact::kBlock;
    std::int64_t* out = words + slot.offset;
    // Every pair's load is issued before the first digit is computed: more bytes in flight.
    std::uint32_t bits[kPairs][2];
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (e < count) load_pair(x + e, count - e, bits[k]);
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (e < count) {
        store_pair(out + e, count - e, exact::digits_of(bits[k][0], slot.bottom, limb_bits).low,
                   exact::digits_of(bits[k][1], slot.bottom, limb_bits).low);
      }
    }
  }
}

// Blocks of several limbs or with special words: every limb's word is written (a zero where
// the element has no digit), so no zero-filling pass is needed, then the special words.
__global__ void __launch_bounds__(kThreads)
    encode_general_kernel(const float* values, ExactPlanView plan, std::int64_t* words) {
  for (std::size_t b = blockIdx.x; b < plan.block_count; b += gridDim.x) {
    const ExactBlockSlot slot = plan.blocks[b];
    if (one_limb_slot(slot)) continue;
    const std::size_t count =
        min(static_cast<std::size_t>(exact::kBlock), plan.count - b * exact::kBlock);
    const float* x = values + b * exact::kBlock;
    std::int64_t* out = words + slot.offset;
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (e >= count) break;
      const std::size_t left = count - e;
      std::uint32_t bits[2];
      load_pair(x + e, left, bits);
      const exact::Digits d0 = exact::digits_of(bits[0], slot.bottom, plan.limb_bits);
      const exact::Digits d1 = exact::digits_of(bits[1], slot.bottom, plan.limb_bits);
      for (int j = 0; j < slot.limbs; ++j) {
        const auto digit = [j](const exact::Digits& d) -> std::int64_t {
          if (d.first_limb < 0) return 0;
          return j == d.first_limb ? d.low : j == d.first_limb + 1 ? d.high : 0;
        };
        store_pair(out + static_cast<std::size_t>(j) * count + e, left, digit(d0), digit(d1));
      }
      if (slot.special != 0) {
        store_pair(out + static_cast<std::size_t>(slot.limbs) * count + e, left,
                   exact::special_word_of(bits[0]), exact::special_word_of(bits[1]));
      }
    }
  }
}

// Every limb width a world of 1 … 2^20 ranks gets: 62 (W ≤ 2) down to 43 (W > 2^19).
constexpr int kWidestLimb = 62;
constexpr int kNarrowestLimb = 43;
using EncodeKernel = void (*)(const float*, ExactPlanView, std::int64_t*);
template <int... kOffsets>
constexpr std::array<EncodeKernel, sizeof...(kOffsets)> constant_width_encoders(
    std::integer_sequence<int, kOffsets...>) {
  return {&encode_one_limb_kernel<kNarrowestLimb + kOffsets>...};
}
constexpr auto kConstantWidthEncoders =
    constant_width_encoders(std::make_integer_sequence<int, kWidestLimb - kNarrowestLimb + 1>{});

// ---- Round -------------------------------------------------------------------------------

// exact::round_one_limb for a mean, with each 32-bit digit step of its long division done by
// the reciprocal of W instead of a 64-bit division: the same quotient words and remainder
// (every dividend is below W × 2^32 ≤ 2^52, inside the reciprocal's range), so the same
// round_magnitude call and the same bits.
__device__ __forceinline__ std::uint32_t round_one_limb_mean(std::int64_t d, int bottom,
                                                             const Reciprocal& w) {
  if (d == 0) return 0u;
  const std::uint32_t sign = d < 0 ? 0x80000000u : 0u;
  const std::uint64_t magnitude =
      d < 0 ? 0 - static_cast<std::uint64_t>(d) : static_cast<std::uint64_t>(d);
  const std::uint64_t digits[4] = {magnitude >> 32, magnitude & 0xFFFFFFFFu, 0, 0};
  std::uint64_t remainder = 0;
  std::uint64_t out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t cur = (remainder << 32) | digits[i];
    out[i] = __umul64hi(cur, w.magic) >> w.shift;
    remainder = cur - out[i] * w.divisor;
  }
  exact::BigMagnitude<2> q{};
  q.word[1] = (out[0] << 32) | out[1];
  q.word[0] = (out[2] << 32) | out[3];
  return sign | exact::round_magnitude(q, bottom - exact::kMeanShift, remainder != 0);
}

struct RoundArgs {
  const std::int64_t* sums;
  ExactPlanView plan;
  float* out;
  Reciprocal reciprocal;  // of plan.world, for the mean with kReciprocal
  int log2_world;         // for the mean with kPowerOfTwo
};

template <bool kMean, MeanDivision kDivision>
__device__ __forceinline__ std::uint32_t round_digit(std::int64_t d, int bottom,
                                                     const RoundArgs& a) {
  if constexpr (kMean && kDivision == MeanDivision::kReciprocal) {
    return round_one_limb_mean(d, bottom, a.reciprocal);
  } else if constexpr (kMean && kDivision == MeanDivision::kPowerOfTwo) {
    // |D| / 2^k × 2^(bottom − 149) = |D| × 2^(bottom − k − 149), exactly: the sum's rounding.
    return exact::round_one_limb(d, bottom - a.log2_world, a.plan.world, false);
  } else {
    return exact::round_one_limb(d, bottom, a.plan.world, kMean);
  }
}

// The blocks of at most one limb and no specials; the others are left to the general kernel.
template <bool kMean, MeanDivision kDivision>
__global__ void __launch_bounds__(kThreads) round_one_limb_kernel(RoundArgs a) {
  for (std::size_t b = blockIdx.x; b < a.plan.block_count; b += gridDim.x) {
    const ExactBlockSlot slot = a.plan.blocks[b];
    if (!one_limb_slot(slot)) continue;
    const std::size_t count =
        min(static_cast<std::size_t>(exact::kBlock), a.plan.count - b * exact::kBlock);
    const std::int64_t* in = a.sums + slot.offset;
    float* y = a.out + b * exact::kBlock;
    // Every pair's load is issued before the first rounding: more bytes in flight.
    std::int64_t d[kPairs][2] = {};  // a block without limbs sums to zero
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (slot.limbs == 1 && e < count) load_pair(in + e, count - e, d[k]);
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (e < count) {
        store_pair(y + e, count - e, round_digit<kMean, kDivision>(d[k][0], slot.bottom, a),
                   round_digit<kMean, kDivision>(d[k][1], slot.bottom, a));
      }
    }
  }
}

__device__ std::uint32_t round_general_element(const std::int64_t* in, std::size_t count,
                                               std::size_t i, const ExactBlockSlot& slot,
                                               const ExactPlanView& plan, bool mean) {
  exact::ExactSum s{};
  for (int j = 0; j < slot.limbs; ++j) {
    exact::add_shifted(s, in[static_cast<std::size_t>(j) * count + i], j * plan.limb_bits);
  }
  const std::int64_t special =
      slot.special != 0 ? in[static_cast<std::size_t>(slot.limbs) * count + i] : 0;
  return exact::round_exact_sum(s, slot.bottom, plan.world, mean, slot.special != 0, special);
}

// Blocks of several limbs or with special words.
__global__ void __launch_bounds__(kThreads) round_general_kernel(RoundArgs a, bool mean) {
  for (std::size_t b = blockIdx.x; b < a.plan.block_count; b += gridDim.x) {
    const ExactBlockSlot slot = a.plan.blocks[b];
    if (one_limb_slot(slot)) continue;
    const std::size_t count =
        min(static_cast<std::size_t>(exact::kBlock), a.plan.count - b * exact::kBlock);
    const std::int64_t* in = a.sums + slot.offset;
    float* y = a.out + b * exact::kBlock;
    for (int k = 0; k < kPairs; ++k) {
      const std::size_t e = 2 * threadIdx.x + k * (2 * kThreads);
      if (e >= count) break;
      const std::size_t left = count - e;
      const std::uint32_t r0 = round_general_element(in, count, e, slot, a.plan, mean);
      const std::uint32_t r1 =
          left >= 2 ? round_general_element(in, count, e + 1, slot, a.plan, mean) : 0u;
      store_pair(y + e, left, r0, r1);
    }
  }
}

// ---- Combine -----------------------------------------------------------------------------

template <bool kMax>
__device__ __forceinline__ std::int64_t combine(std::int64_t a, std::int64_t b) {
  if constexpr (kMax) {
    return a > b ? a : b;
  } else {
    // In unsigned arithmetic: the same bits as the int64 sum, without signed overflow's
    // undefined behaviour should a caller break the no-overflow promise.
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  }
}

struct CombineArgs {
  const std::int64_t* stacked;
  std::int64_t* out;
  std::size_t stride;
  std::size_t n;
  std::size_t units;  // longlong2 units (0 on the scalar path)
  std::uint32_t slots;
};

template <bool kMax>
__global__ void __launch_bounds__(kThreads) combine_kernel(CombineArgs a) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t u = thread; u < a.units; u += threads) {
    longlong2 acc = reinterpret_cast<const longlong2*>(a.stacked)[u];
    for (std::uint32_t r = 1; r < a.slots; ++r) {
      const longlong2 v = reinterpret_cast<const longlong2*>(a.stacked + r * a.stride)[u];
      acc.x = combine<kMax>(acc.x, v.x);
      acc.y = combine<kMax>(acc.y, v.y);
    }
    reinterpret_cast<longlong2*>(a.out)[u] = acc;
  }
  for (std::size_t i = 2 * a.units + thread; i < a.n; i += threads) {
    std::int64_t acc = a.stacked[i];
    for (std::uint32_t r = 1; r < a.slots; ++r)
      acc = combine<kMax>(acc, a.stacked[r * a.stride + i]);
    a.out[i] = acc;
  }
}

// ---- Launches ----------------------------------------------------------------------------

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

template <typename Kernel>
unsigned grid_for(Kernel kernel, std::size_t needed_blocks) {
  return cuda_detail::resident_grid(reinterpret_cast<const void*>(kernel), kThreads, needed_blocks);
}

void check_plan(const ExactPlanView& plan, const char* who) {
  const std::string name(who);
  RV_ENFORCE_EQ(InputError, plan.block_count, exact_block_count(plan.count),
                name + ": the plan's blocks do not cover its elements");
  RV_ENFORCE_GE(InputError, plan.world, 1u, name + ": world size");
  RV_ENFORCE_LE(InputError, plan.world, exact::kMaxWorld, name + ": the largest world is 2^20");
  RV_ENFORCE_EQ(InputError, plan.limb_bits, exact::limb_bits(plan.world),
                name + ": the plan's limb width is not its world's");
  if (plan.block_count != 0 && plan.blocks == nullptr) {
    throw InputError(name + ": the plan's " + std::to_string(plan.block_count) +
                     " block slots are not on the device (null pointer)");
  }
}

void check_pointer(const void* p, const char* who, const char* what) {
  if (p == nullptr) throw InputError(std::string(who) + ": null device pointer for " + what);
}

// k when W = 2^k (W ≤ 2^20), −1 otherwise.
int log2_if_power_of_two(std::uint32_t world) {
  int k = 0;
  while ((std::uint32_t{1} << k) < world) ++k;
  return (std::uint32_t{1} << k) == world ? k : -1;
}

}  // namespace

ExactPlanView view_of(const ExactPlan& plan, const ExactBlockSlot* d_blocks) {
  ExactPlanView view;
  view.blocks = d_blocks;
  view.block_count = plan.blocks.size();
  view.count = plan.count;
  view.world = plan.world;
  view.limb_bits = plan.limb_bits;
  view.words = plan.words;
  view.general_blocks =
      std::any_of(plan.blocks.begin(), plan.blocks.end(),
                  [](const ExactBlockSlot& slot) { return !one_limb_slot(slot); });
  return view;
}

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

void launch_exact_encode(const float* d_values, const ExactPlanView& plan, std::int64_t* d_words,
                         void* cuda_stream) {
  detail::launch_exact_encode_with(d_values, plan, d_words, cuda_stream,
                                   detail::default_limb_width());
}

void launch_exact_round(const std::int64_t* d_sums, const ExactPlanView& plan, Op op, float* d_out,
                        void* cuda_stream) {
  detail::launch_exact_round_with(d_sums, plan, op, d_out, cuda_stream,
                                  detail::default_mean_division(plan.world));
}

void launch_combine_words(const std::int64_t* d_stacked, std::uint32_t slots,
                          std::size_t slot_stride, std::size_t n, IntReduction op,
                          std::int64_t* d_out, void* cuda_stream) {
  RV_ENFORCE_GE(InputError, slots, 1u, "launch_combine_words: at least one slot");
  if (n == 0) return;
  check_pointer(d_stacked, "launch_combine_words", "the slots");
  check_pointer(d_out, "launch_combine_words", "the output");
  for (std::uint32_t r = 0; r < slots; ++r) {
    const std::int64_t* slot = d_stacked + static_cast<std::size_t>(r) * slot_stride;
    if (slot == d_out) continue;  // in place into slot 0 (or a zero stride): read, then written
    if (address(slot) < address(d_out + n) && address(d_out) < address(slot + n)) {
      throw InputError("launch_combine_words: the output overlaps slot " + std::to_string(r) +
                       " (only an exact in-place combine into slot 0 is allowed)");
    }
  }
  CombineArgs args{d_stacked, d_out, slot_stride, n, 0, slots};
  const bool vector = address(d_stacked) % 16 == 0 && address(d_out) % 16 == 0 &&
                      (slots == 1 || slot_stride % 2 == 0);
  if (vector) args.units = n / 2;
  const std::size_t work = vector ? args.units + n % 2 : n;
  const auto stream = as_stream(cuda_stream);
  if (op == IntReduction::kMax) {
    const unsigned grid = grid_for(combine_kernel<true>, (work + kThreads - 1) / kThreads);
    combine_kernel<true><<<grid, kThreads, 0, stream>>>(args);
  } else {
    const unsigned grid = grid_for(combine_kernel<false>, (work + kThreads - 1) / kThreads);
    combine_kernel<false><<<grid, kThreads, 0, stream>>>(args);
  }
  RV_CUDA_CHECK_LAUNCH("combine_kernel");
}

namespace detail {

LimbWidth default_limb_width() { return LimbWidth::kCompileTime; }

const char* to_string(LimbWidth width) {
  switch (width) {
    case LimbWidth::kRunTime:
      return "run-time-width";
    case LimbWidth::kCompileTime:
      return "compile-time-width";
  }
  return "unknown";
}

void launch_exact_encode_with(const float* d_values, const ExactPlanView& plan,
                              std::int64_t* d_words, void* cuda_stream, LimbWidth width) {
  check_plan(plan, "launch_exact_encode");
  if (plan.count == 0) return;
  check_pointer(d_values, "launch_exact_encode", "the values");
  check_pointer(d_words, "launch_exact_encode", "the words");
  static_assert(exact::kMaxWorld == (1u << 20), "the constant widths cover W <= 2^20");
  EncodeKernel kernel = &encode_one_limb_kernel<0>;
  if (width == LimbWidth::kCompileTime) {
    kernel = kConstantWidthEncoders[static_cast<std::size_t>(plan.limb_bits - kNarrowestLimb)];
  }
  const auto stream = as_stream(cuda_stream);
  kernel<<<grid_for(kernel, plan.block_count), kThreads, 0, stream>>>(d_values, plan, d_words);
  RV_CUDA_CHECK_LAUNCH("encode_one_limb_kernel");
  if (plan.general_blocks) {
    encode_general_kernel<<<grid_for(encode_general_kernel, plan.block_count), kThreads, 0,
                            stream>>>(d_values, plan, d_words);
    RV_CUDA_CHECK_LAUNCH("encode_general_kernel");
  }
}

MeanDivision default_mean_division(std::uint32_t world) {
  return log2_if_power_of_two(world) >= 0 ? MeanDivision::kPowerOfTwo : MeanDivision::kReciprocal;
}

bool applies_to(MeanDivision division, std::uint32_t world) {
  return division != MeanDivision::kPowerOfTwo || log2_if_power_of_two(world) >= 0;
}

const char* to_string(MeanDivision division) {
  switch (division) {
    case MeanDivision::kLongDivision:
      return "long-division";
    case MeanDivision::kReciprocal:
      return "reciprocal";
    case MeanDivision::kPowerOfTwo:
      return "power-of-two";
  }
  return "unknown";
}

// floor(x / W) = floor(x × m / 2^k) for every x < 2^N (N = 53) when 2^k ≤ m × W ≤ 2^k +
// 2^(k − N): write x = qW + r; then x·m / 2^k = q + r/W + x·e / (W·2^k) with e = m·W − 2^k,
// and x·e < 2^N · W ≤ 2^k · W / 2^(k−N) … < 2^k, so the sum stays below q + 1. With m =
// ceil(2^k / W), e < W ≤ 2^l (l = ceil(log2 W)), so k ≥ N + l suffices. k = max(64, N + l):
// the quotient is the high word of the 128-bit product shifted by k − 64, and m < 2^64 for
// W ≥ 2 (m ≤ 2^63 + 1 when k = 64; m < 2^54 + 1 when k = N + l > 64, as W > 2^(l−1)).
Reciprocal reciprocal_of(std::uint32_t divisor) {
  RV_ENFORCE_GE(InputError, divisor, 2u, "reciprocal_of: the divisor");
  RV_ENFORCE_LE(InputError, divisor, exact::kMaxWorld, "reciprocal_of: the divisor");
  constexpr int kDividendBits = 53;
  int l = 0;
  while ((std::uint64_t{1} << l) < divisor) ++l;
  const int k = std::max(64, kDividendBits + l);
  // floor((2^k − 1) / W) by long division in 32-bit digits: 2^k − 1 is the digits
  // (2^(k−64) − 1, 2^32 − 1, 2^32 − 1); then m = that + 1 = ceil(2^k / W).
  const std::uint64_t digits[3] = {(std::uint64_t{1} << (k - 64)) - 1, 0xFFFFFFFFu, 0xFFFFFFFFu};
  std::uint64_t remainder = 0, quotient[3];
  for (int i = 0; i < 3; ++i) {
    const std::uint64_t cur = (remainder << 32) | digits[i];
    quotient[i] = cur / divisor;
    remainder = cur % divisor;
  }
  if (quotient[0] != 0) throw InternalError("reciprocal_of: the reciprocal exceeds 64 bits");
  Reciprocal r;
  r.magic = ((quotient[1] << 32) | quotient[2]) + 1;
  r.shift = k - 64;
  r.divisor = divisor;
  return r;
}

void launch_exact_round_with(const std::int64_t* d_sums, const ExactPlanView& plan, Op op,
                             float* d_out, void* cuda_stream, MeanDivision division) {
  check_plan(plan, "launch_exact_round");
  if (!applies_to(division, plan.world)) {
    throw InputError("launch_exact_round: the " + std::string(to_string(division)) +
                     " mean does not apply to W = " + std::to_string(plan.world));
  }
  if (plan.count == 0) return;
  check_pointer(d_sums, "launch_exact_round", "the sums");
  check_pointer(d_out, "launch_exact_round", "the output");
  if (address(d_out) < address(d_sums + plan.words) &&
      address(d_sums) < address(d_out + plan.count)) {
    throw InputError("launch_exact_round: the output overlaps the summed words");
  }
  const bool mean = op == Op::kMean;
  RoundArgs args{d_sums, plan, d_out, Reciprocal{}, log2_if_power_of_two(plan.world)};
  // W = 1 has no reciprocal below 2^64; its mean is the long division's (one step per digit).
  if (mean && plan.world == 1 && division == MeanDivision::kReciprocal) {
    division = MeanDivision::kLongDivision;
  }
  if (mean && division == MeanDivision::kReciprocal) args.reciprocal = reciprocal_of(plan.world);
  const auto stream = as_stream(cuda_stream);
  const auto launch_one_limb = [&](auto kernel) {
    kernel<<<grid_for(kernel, plan.block_count), kThreads, 0, stream>>>(args);
    RV_CUDA_CHECK_LAUNCH("round_one_limb_kernel");
  };
  if (!mean) {
    launch_one_limb(round_one_limb_kernel<false, MeanDivision::kLongDivision>);
  } else if (division == MeanDivision::kReciprocal) {
    launch_one_limb(round_one_limb_kernel<true, MeanDivision::kReciprocal>);
  } else if (division == MeanDivision::kPowerOfTwo) {
    launch_one_limb(round_one_limb_kernel<true, MeanDivision::kPowerOfTwo>);
  } else {
    launch_one_limb(round_one_limb_kernel<true, MeanDivision::kLongDivision>);
  }
  if (plan.general_blocks) {
    round_general_kernel<<<grid_for(round_general_kernel, plan.block_count), kThreads, 0, stream>>>(
        args, mean);
    RV_CUDA_CHECK_LAUNCH("round_general_kernel");
  }
}

}  // namespace detail
}  // namespace rv
