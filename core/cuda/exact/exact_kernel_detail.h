// What the exact kernels (exact_{agreement,encode,round,combine,stacked}_kernel.cu) share: the
// mapping of an exact block to threads, the paired loads and stores, the fast one-limb
// roundings and the launch helpers. Device code: included only by the exact kernels' .cu
// files. Private to core/cuda.
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
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/cuda/launch_grid.h"
#include "core/exact/exact_law.h"
#include "core/fold_law.h"

namespace rv::exact_kernel_detail {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
// Element pairs per thread in the encode and round kernels: 2 × 256 × 2 = one exact block.
constexpr int kPairs = static_cast<int>(exact::kBlock) / (2 * kThreads);
static_assert(kPairs * 2 * kThreads == static_cast<int>(exact::kBlock),
              "the encode and round kernels cover one exact block per CUDA block");
static_assert(exact::kBlock == 32 * 8 * 4, "the agreement kernel gives a warp 8 float4s a lane");

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

// A block the one-limb kernels take: at most one limb and no special words.
__host__ __device__ __forceinline__ bool one_limb_slot(const ExactBlockSlot& slot) {
  return slot.limbs <= 1 && slot.special == 0;
}

// ---- One-limb roundings (the round kernel and the stacked kernel) -----------------------

// exact::round_one_limb for a sum, fast: (float)D is one correctly rounded conversion (RNE
// to 24 bits), and scaling by 2^(bottom − 149) is exact in double and then in float while
// the result is normal, so the bits are RNE24(D × 2^(bottom − 149)): the law's, including the
// overflow to ±Inf (a 24-bit value ≥ 2^128 converts to Inf). Below 2^-126 the law rounds at
// 2^-149 instead of at 24 bits; a fast result ≥ 2^-126 implies the exact value is
// ≥ 2^-126 − 2^-151, where both give the same bits, so only fast results below 2^-126 (and
// nonzero) take the law's own path.
__device__ __forceinline__ std::uint32_t round_one_limb_sum(std::int64_t d, int bottom) {
  const float f = __ll2float_rn(d);
  const double scale = __longlong_as_double(static_cast<long long>(bottom - 149 + 1023) << 52);
  const float scaled = __double2float_rn(static_cast<double>(f) * scale);
  if (d == 0 || fabsf(scaled) >= 0x1p-126f) return float_bits(scaled);
  return exact::round_one_limb(d, bottom, 1, false);
}

// exact::round_one_limb for a mean, in double, screened. The true mean is
// v = D × 2^(bottom − 149) / W. y = (double(D) × r) × 2^(bottom − 149), r = 1/W rounded to
// double, has three roundings to 53 bits (the conversion, r, the product; the power of two
// is exact in double's range), so |y − v| ≤ 3 × 2^-53 |v|: at most 3 units in y's last
// place. Rounding y to float (RNE24) gives RNE24(v) unless a rounding boundary of float lies
// between them; float's boundaries are the midpoints between floats, whose pattern in y's
// 29 bits below the float's 24 is 2^28 exactly. So a y whose 29 low bits are more than 8
// from 2^28 rounds like v (overflow included: the boundary to Inf is the midpoint above
// FLT_MAX), and the rest, about 17 in 2^29, take the law's long division. Results below
// 2^-125 do too: there float rounds at 2^-149, not at 24 bits.
__device__ __forceinline__ std::uint32_t round_one_limb_mean_screened(std::int64_t d, int bottom,
                                                                      std::uint32_t world,
                                                                      double reciprocal) {
  if (d == 0) return 0u;
  const double scale = __longlong_as_double(static_cast<long long>(bottom - 149 + 1023) << 52);
  const double y = __dmul_rn(__dmul_rn(__ll2double_rn(d), reciprocal), scale);
  const auto low29 = static_cast<std::uint32_t>(__double_as_longlong(y)) & ((1u << 29) - 1);
  const bool near_midpoint = low29 - ((1u << 28) - 8) <= 16;
  if (near_midpoint || fabs(y) < 0x1p-125) return exact::round_one_limb(d, bottom, world, true);
  return float_bits(__double2float_rn(y));
}

// exact::round_one_limb for a mean, as the correctly rounded double quotient where
// |D| < 2^51: D and the divisor W × 2^(149 − bottom) are exact doubles, the division rounds
// the true mean once to 53 bits, and the conversion to float then gives the law's bits (no
// float rounding boundary lies between the two: host_exact.cc argues it for the host's
// divided mean, the same expression). Wider sums take the screened quotient.
__device__ __forceinline__ std::uint32_t round_one_limb_mean_divided(std::int64_t d, int bottom,
                                                                     std::uint32_t world,
                                                                     double reciprocal) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 51;
  if (d <= -kLimit || d >= kLimit)
    return round_one_limb_mean_screened(d, bottom, world, reciprocal);
  const double divisor = static_cast<double>(world) *
                         __longlong_as_double(static_cast<long long>(149 - bottom + 1023) << 52);
  return float_bits(__double2float_rn(__ddiv_rn(__ll2double_rn(d), divisor)));
}

// ---- Launches ----------------------------------------------------------------------------

inline std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

inline cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

// k when W = 2^k (W ≤ 2^20), −1 otherwise.
inline int log2_if_power_of_two(std::uint32_t world) {
  int k = 0;
  while ((std::uint32_t{1} << k) < world) ++k;
  return (std::uint32_t{1} << k) == world ? k : -1;
}

template <typename Kernel>
unsigned grid_for(Kernel kernel, std::size_t needed_blocks) {
  return cuda_detail::resident_grid(reinterpret_cast<const void*>(kernel), kThreads, needed_blocks);
}

// Throws InputError naming `who` for a plan view the kernels cannot take (exact_kernel.cu).
void check_plan(const ExactPlanView& plan, const char* who);

// Throws InputError naming `who` and `what` for a null device pointer (exact_kernel.cu).
void check_pointer(const void* p, const char* who, const char* what);

}  // namespace rv::exact_kernel_detail
