// The stacked kernel: the exact contract over W slots already in one device's memory, in one
// launch and without the host (launch_exact_reduce_stacked, exact_kernel.h).
//
// The live reducers agree on one window per block of 1024 elements, because the library's
// all-reduce must be told how many int64 words to sum before any is sent. Here every addend
// is local, so each element can have its own window, found from its own W addends: the
// window only has to hold every addend's bits, and any window that does gives the same
// exact sum. Each thread takes 4 consecutive elements at a time and
//   1. over the W slots, keeps per element the largest and the smallest nonzero |x|
//      (float max and min), the float sum of the addends (not finite exactly when one is
//      NaN or ±Inf, or the float sum overflows) and the AND of their bits (for zeros: is
//      every addend −0?);
//   2. when that sum is finite and the window from the smallest's lowest possible bit to the
//      largest's highest (their exponents alone) fits one limb of limb_bits(W) bits
//      (gradient-like data: nearly always), sums the W digits in one int64 — each digit
//      x × 2^(149 − bottom) converted to an integer, exact in float — and rounds it (in
//      float where the scale allows, else with the round kernel's one-limb roundings), and
//      stores;
//   3. otherwise (rare, per element) takes the general path once the one-limb results are
//      stored: the element's agreement words, window and digits as exact_law.h defines
//      them, the wide sum exact::ExactSum and the special word, exact::round_exact_sum.
// Worlds of up to 4 slots are read once and kept in registers; larger ones are read again
// for step 2 (the same thread's addresses, just read: L1 or L2). No thread waits for another.
// (Issuing the next group's loads before the current group's arithmetic was measured and
// dropped: it needs 80 registers to this kernel's 64, and lost 0.03–0.07 of a copy.) The bits are
// those of core/exact/exact_reduction.h's exact_reduce_stacked: each is the correctly rounded value
// of the same exact sum (or sum / W), however it was built.
#include <cmath>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/exact_kernel.h"
#include "core/cuda/exact_kernel_detail.h"
#include "core/error.h"
#include "core/exact/exact_law.h"

namespace rv {
namespace {

using exact_kernel_detail::as_stream;
using exact_kernel_detail::check_pointer;
using exact_kernel_detail::grid_for;
using exact_kernel_detail::kThreads;
using exact_kernel_detail::log2_if_power_of_two;
using exact_kernel_detail::round_one_limb_mean_screened;
using exact_kernel_detail::round_one_limb_sum;

// Consecutive elements per thread (one float4 per slot where the slots allow it).
constexpr int kGroup = 4;
// Worlds up to this many slots are read once: their values stay in registers.
constexpr std::uint32_t kRegisterSlots = 4;

struct StackedArgs {
  const float* stacked;
  std::size_t slot_stride;
  std::size_t n;
  std::size_t groups;  // ⌈n / kGroup⌉
  float* out;
  std::uint32_t world;
  int limb_bits;
  int log2_world;            // the mean's exponent shift when W = 2^k
  double reciprocal_double;  // 1 / W rounded to double, for the screened mean
  bool vector;               // every slot's element 0 is 16-byte aligned: float4 loads
};

// The group's values of one slot as bits; elements past n read as +0 (never stored).
__device__ __forceinline__ void load_group(const StackedArgs& a, std::uint32_t slot,
                                           std::size_t first, std::uint32_t bits[kGroup]) {
  const float* p = a.stacked + slot * a.slot_stride + first;
  const std::size_t left = a.n - first;
  if (a.vector && left >= kGroup) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    bits[0] = float_bits(v.x);
    bits[1] = float_bits(v.y);
    bits[2] = float_bits(v.z);
    bits[3] = float_bits(v.w);
    return;
  }
#pragma unroll
  for (int i = 0; i < kGroup; ++i)
    bits[i] = static_cast<std::size_t>(i) < left ? float_bits(p[i]) : 0u;
}

__device__ __forceinline__ void store_group(const StackedArgs& a, std::size_t first,
                                            const std::uint32_t bits[kGroup]) {
  float* p = a.out + first;
  const std::size_t left = a.n - first;
  if (a.vector && left >= kGroup && reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
    *reinterpret_cast<float4*>(p) = make_float4(float_from_bits(bits[0]), float_from_bits(bits[1]),
                                                float_from_bits(bits[2]), float_from_bits(bits[3]));
    return;
  }
#pragma unroll
  for (int i = 0; i < kGroup; ++i) {
    if (static_cast<std::size_t>(i) < left) p[i] = float_from_bits(bits[i]);
  }
}

// Slots r … r + kRegisterSlots − 1 (those below W) of the group at `first`: every load of the
// round is issued before any is used.
__device__ __forceinline__ void load_round(const StackedArgs& a, std::uint32_t r, std::size_t first,
                                           std::uint32_t held[kRegisterSlots][kGroup]) {
#pragma unroll
  for (std::uint32_t j = 0; j < kRegisterSlots; ++j) {
    if (r + j < a.world) load_group(a, r + j, first, held[j]);
  }
}

// What step 1 keeps of one element's addends.
struct ElementWindow {
  float largest = 0.0f;       // the largest |x| (fmaxf passes over a NaN)
  float smallest = INFINITY;  // the smallest nonzero |x| (+Inf: none yet)
  // Σ x in float: not finite exactly when an addend is NaN or ±Inf, or the float sum of
  // finite addends overflows; either way the element takes the general path.
  float probe = 0.0f;
  std::uint32_t sign_and = 0xFFFFFFFFu;  // AND of the addends' bits: bit 31 = every one negative
};

__device__ __forceinline__ void widen(ElementWindow& w, std::uint32_t bits) {
  const float x = float_from_bits(bits);
  const float magnitude = fabsf(x);
  w.largest = fmaxf(w.largest, magnitude);
  w.smallest = fminf(w.smallest, magnitude != 0.0f ? magnitude : INFINITY);
  w.probe = __fadd_rn(w.probe, x);
  w.sign_and &= bits;
}

// e = max(biased exponent, 1) of a non-negative bit pattern: the bits of a nonzero finite |x|
// lie in positions [e − 1, e + 22] (units of 2^-149); e − 1, its scale, is
// exact::magnitude_of's shift.
__device__ __forceinline__ int exponent_of(std::uint32_t magnitude_bits) {
  return max(static_cast<int>(magnitude_bits >> 23), 1);
}

// The one-limb digit of a finite value in a window whose bottom is at most its scale:
// |k| / 2^bottom with x's sign, the same integer exact::digits_of writes when the window has
// one limb. ±0 gives 0 (its scale, 0, may lie below the bottom: the shift is clamped).
__device__ __forceinline__ std::int64_t one_limb_digit(std::uint32_t bits, int bottom) {
  const std::uint32_t exponent = (bits >> 23) & 0xFFu;
  const std::uint32_t significand = (bits & 0x7FFFFFu) | (exponent != 0 ? 0x800000u : 0u);
  const int shift = max(max(static_cast<int>(exponent), 1) - 1 - bottom, 0);
  const auto digit = static_cast<std::int64_t>(std::uint64_t{significand} << shift);
  return (bits >> 31) != 0 ? -digit : digit;
}

// The lowest window bottom whose scale factor 2^(149 − bottom) is a normal float.
constexpr int kLowestFloatBottom = 22;

// The same digit for a window bottom ≥ kLowestFloatBottom, in two instructions: x × 2^(149 −
// bottom) = ±|k| / 2^bottom is exact in float (24 significant bits, ≥ 1 for a nonzero
// addend, whose scale is at least the bottom, and < 2^62 inside one limb: normal), and so is
// its conversion to int64; ±0 gives 0. `factor` is 2^(149 − bottom).
__device__ __forceinline__ std::int64_t float_digit(std::uint32_t bits, float factor) {
  return __float2ll_rz(__fmul_rn(float_from_bits(bits), factor));
}

// One element the one-limb path cannot take: its agreement words, window and digits as the
// live reducers would form them had its block held it alone, added into the wide sum, the
// special words summed, rounded. Out of line, so that its registers do not weigh on the
// common path's occupancy.
__device__ __noinline__ std::uint32_t general_element(const float* x, std::size_t slot_stride,
                                                      std::uint32_t world, int limb_bits,
                                                      bool mean) {
  exact::AgreementWords words;
  for (std::uint32_t r = 0; r < world; ++r)
    exact::widen_agreement(words, float_bits(x[r * slot_stride]));
  const exact::Window window = exact::window_of(words, world);
  exact::ExactSum s{};
  std::int64_t special = 0;
  for (std::uint32_t r = 0; r < world; ++r) {
    const std::uint32_t bits = float_bits(x[r * slot_stride]);
    if (window.special) special += exact::special_word_of(bits);
    const exact::Digits d = exact::digits_of(bits, window.bottom, limb_bits);
    if (d.first_limb < 0) continue;
    exact::add_shifted(s, d.low, d.first_limb * limb_bits);
    if (d.high != 0) exact::add_shifted(s, d.high, (d.first_limb + 1) * limb_bits);
  }
  return exact::round_exact_sum(s, window.bottom, world, mean, window.special, special);
}

// round_one_limb_sum (exact_kernel_detail.h) in float where 2^(bottom − 149) is a normal
// float (bottom ≥ 23): f = (float)D is RNE to 24 bits, and f × 2^(bottom − 149) is exact in
// float while the result is normal and overflows to ±Inf exactly when the law does, so the
// bits are RNE24(D × 2^(bottom − 149)); a result below 2^-126 takes the law's own path, as
// round_one_limb_sum explains. One conversion instead of three.
__device__ __forceinline__ std::uint32_t round_one_limb_sum_in_float(std::int64_t d, int bottom) {
  if (bottom < 23) return round_one_limb_sum(d, bottom);
  const float scaled = __fmul_rn(__ll2float_rn(d), __int_as_float((bottom - 149 + 127) << 23));
  if (d == 0 || fabsf(scaled) >= 0x1p-126f) return float_bits(scaled);
  return exact::round_one_limb(d, bottom, 1, false);
}

template <bool kMean, bool kPowerOfTwo>
__device__ __forceinline__ std::uint32_t round_one_limb(std::int64_t d, int bottom,
                                                        const StackedArgs& a) {
  if constexpr (!kMean) {
    return round_one_limb_sum_in_float(d, bottom);
  } else if constexpr (kPowerOfTwo) {
    // |D| / 2^k × 2^(bottom − 149) = |D| × 2^(bottom − k − 149) exactly: the sum's rounding.
    return round_one_limb_sum_in_float(d, bottom - a.log2_world);
  } else {
    return round_one_limb_mean_screened(d, bottom, a.world, a.reciprocal_double);
  }
}

template <bool kMean, bool kPowerOfTwo>
__global__ void __launch_bounds__(kThreads) exact_stacked_kernel(StackedArgs a) {
  const bool in_registers = a.world <= kRegisterSlots;
  for (std::size_t g = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; g < a.groups;
       g += static_cast<std::size_t>(gridDim.x) * kThreads) {
    const std::size_t first = g * kGroup;

    // Step 1: each element's window.
    std::uint32_t held[kRegisterSlots][kGroup];
    ElementWindow window[kGroup];
    for (std::uint32_t r = 0; r < a.world; r += kRegisterSlots) {
      load_round(a, r, first, held);
#pragma unroll
      for (std::uint32_t j = 0; j < kRegisterSlots; ++j) {
        if (r + j >= a.world) break;
#pragma unroll
        for (int i = 0; i < kGroup; ++i) widen(window[i], held[j][i]);
      }
    }

    // Step 2: the one-limb sums, where no addend is NaN or ±Inf and the window [the
    // smallest's e − 1, the largest's e + 22] fits one limb (for a subnormal largest, e + 22
    // is above its top bit: the window is 23 bits, far inside a limb); an element of zeros
    // alone sums to zero, +0 unless every addend is −0 (its bottom, 254 from the smallest's
    // +Inf, gives zero digits).
    bool one_limb[kGroup], zeros[kGroup], integer_digits[kGroup];
    int bottom[kGroup];
    float factor[kGroup];
    bool every_float_digit = true;
#pragma unroll
    for (int i = 0; i < kGroup; ++i) {
      const ElementWindow& w = window[i];
      zeros[i] = w.largest == 0.0f;
      const int largest = exponent_of(float_bits(w.largest));
      const int smallest = exponent_of(float_bits(w.smallest));
      bottom[i] = smallest - 1;
      one_limb[i] = isfinite(w.probe) && largest - smallest + 24 <= a.limb_bits;
      integer_digits[i] = one_limb[i] && bottom[i] < kLowestFloatBottom;
      factor[i] = __int_as_float((149 - max(bottom[i], kLowestFloatBottom) + 127) << 23);
      every_float_digit = every_float_digit && !integer_digits[i];
    }
    // Summed as unsigned words: the digits of an element that will not use them (special,
    // or zeros) may be anything (a NaN converts to INT64_MIN) and must not overflow a signed
    // sum; an element that uses them stays within ±2^63 (the window's limb bits).
    std::uint64_t sum[kGroup] = {};
    for (std::uint32_t r = 0; r < a.world; r += kRegisterSlots) {
      if (!in_registers) load_round(a, r, first, held);
#pragma unroll
      for (std::uint32_t j = 0; j < kRegisterSlots; ++j) {
        if (r + j >= a.world) break;
#pragma unroll
        for (int i = 0; i < kGroup; ++i) {
          if (every_float_digit) {
            sum[i] += static_cast<std::uint64_t>(float_digit(held[j][i], factor[i]));
          } else {
            sum[i] +=
                static_cast<std::uint64_t>(integer_digits[i] ? one_limb_digit(held[j][i], bottom[i])
                                                             : float_digit(held[j][i], factor[i]));
          }
        }
      }
    }

    // Step 3: round and store the one-limb results; then, with nothing else held, the rest
    // take the general path (its addends, slot 0's included, are still unwritten).
    std::uint32_t result[kGroup];
    bool every_one_limb = true;
#pragma unroll
    for (int i = 0; i < kGroup; ++i) {
      result[i] = zeros[i] ? window[i].sign_and & 0x80000000u
                           : round_one_limb<kMean, kPowerOfTwo>(static_cast<std::int64_t>(sum[i]),
                                                                bottom[i], a);
      every_one_limb = every_one_limb && one_limb[i];
    }
    if (every_one_limb) {
      store_group(a, first, result);
      continue;
    }
    unsigned general = 0;
#pragma unroll
    for (int i = 0; i < kGroup; ++i) {
      if (first + i >= a.n) break;
      if (one_limb[i]) {
        a.out[first + i] = float_from_bits(result[i]);
      } else {
        general |= 1u << i;
      }
    }
    for (int i = 0; i < kGroup; ++i) {
      if ((general >> i) & 1u) {
        a.out[first + i] = float_from_bits(
            general_element(a.stacked + first + i, a.slot_stride, a.world, a.limb_bits, kMean));
      }
    }
  }
}

}  // namespace

void launch_exact_reduce_stacked(const float* d_stacked, std::uint32_t world,
                                 std::size_t slot_stride, std::size_t n, Op op, float* d_out,
                                 void* cuda_stream) {
  constexpr const char* kWho = "launch_exact_reduce_stacked";
  RV_ENFORCE_GE(InputError, world, 1u, "launch_exact_reduce_stacked: world size");
  RV_ENFORCE_LE(InputError, world, exact::kMaxWorld,
                "launch_exact_reduce_stacked: the largest world is 2^20");
  if (world > 1) {
    RV_ENFORCE_GE(InputError, slot_stride, n,
                  "launch_exact_reduce_stacked: the slot stride is shorter than a slot");
  }
  if (n == 0) return;
  check_pointer(d_stacked, kWho, "the stacked addends");
  check_pointer(d_out, kWho, "the output");
  const auto address = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  const StackedArgs args{d_stacked,
                         slot_stride,
                         n,
                         (n + kGroup - 1) / kGroup,
                         d_out,
                         world,
                         exact::limb_bits(world),
                         log2_if_power_of_two(world),
                         1.0 / static_cast<double>(world),
                         address(d_stacked) % 16 == 0 && (world == 1 || slot_stride % 4 == 0)};
  const auto launch = [&](auto kernel) {
    kernel<<<grid_for(kernel, (args.groups + kThreads - 1) / kThreads), kThreads, 0,
             as_stream(cuda_stream)>>>(args);
    RV_CUDA_CHECK_LAUNCH("exact_stacked_kernel");
  };
  if (op == Op::kSum) {
    launch(exact_stacked_kernel<false, false>);
  } else if (args.log2_world >= 0) {
    launch(exact_stacked_kernel<true, true>);
  } else {
    launch(exact_stacked_kernel<true, false>);
  }
}

}  // namespace rv
