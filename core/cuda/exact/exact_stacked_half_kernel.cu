// The exact contract over bf16/f16 stacked slots (cuda_exact_stacked_half,
// half_stacked_kernel.h): one launch, no host synchronisation, 2 bytes read per element and
// slot and 2 written per element.
//
// The method is the f32 stacked kernel's (exact_stacked_kernel.cu): each element has its own
// window, found from its own W addends, and one pass over the slots keeps per element the sum
// of the widened addends in double (from −0), the largest |x| and the smallest nonzero |x| as
// bit patterns. When those show every partial sum exact in double, the double is the exact
// sum; the rest (rare) re-read their addends and take the law (exact_law.h: agreement words,
// window, digits, the 7-word sum, round_exact_sum<Format>) after the common results are
// stored. What differs for the half formats:
//
// * The window's bottom. A value of a format of p significant bits and smallest subnormal
//   2^(kLsbMin − 149) has no set bit below max(top − (p − 1), kLsbMin), top its highest bit;
//   for the smallest addend, widened, that is max(s + 24 − p, kLsbMin) with s its binary32
//   scale (exponent_of − 1). This is monotone in s, so the smallest addend bounds them all.
//   f16 sums are then always exact in double below W = 2^13 (41 bit positions from 2^-24 to
//   65504), and bf16 sums whenever the addends span at most 53 − 8 − ⌈log2 W⌉ binades.
// * The one rounding, straight to the dtype: the double y is rounded to binary32 by rounding
//   to odd (truncate, then set the last bit when the truncation was inexact), and that float
//   to the dtype to nearest-even. Rounding to odd at q ≥ p + 2 bits and then to nearest at p
//   bits gives the nearest p-bit value of y itself (the odd last bit keeps "above or below a
//   midpoint" and "exactly a midpoint" apart): binary32 keeps at least 24 bits where f16
//   (p = 11) and bf16 (p = 8) are normal and at least 18 where they are subnormal (float's
//   subnormals reach 2^-149, theirs stop at 2^-24 and 2^-133), and a y beyond binary32's
//   range truncates to FLT_MAX, odd, which both round to ±Inf as y would. NaN, ±Inf and ±0
//   pass through unchanged: the law's special values, as for f32.
// * The mean. W = 2^k: y = sum × 2^-k, exact. Otherwise y = the correctly rounded double
//   quotient sum / W, and rounding y to the dtype gives the true mean v = S / W rounded:
//   S is a multiple of 2^b (units of 2^-149, b the window's bottom) with |S| < 2^(b + 53),
//   and a rounding boundary M of the dtype (at most p + 1 ≤ 12 significant bits, lowest at
//   m) with v ≠ M has |v − M| = |S − M·W| / W ≥ 2^min(b, m) / W. When m ≥ b that exceeds
//   half an ulp of y (< 2^(b + 1) / W, since |v| < 2^(b + 53) / W); when m < b it is at least
//   2^m / W > 2^(m + 12 − 53) ≥ half an ulp of v near M. So y is never M unless v is, and y
//   lies on v's side of every boundary: the same rounding. (There is no subnormal exception
//   as in the f32 kernel, which rounds the quotient to nearest float directly.)
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/cuda/exact/exact_kernel.h"
#include "core/cuda/half_kernel_detail.h"
#include "core/cuda/half_stacked_kernel.h"
#include "core/dtype_law.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/half_window.h"
#include "core/exact/odd_quotient.h"

namespace rv {
namespace {

using half_kernel_detail::HalfTable;
using half_kernel_detail::kThreads;
using half_kernel_detail::kUnit;
using half_kernel_detail::Unit;

struct ExactHalfArgs {
  std::uint32_t world;
  int limb_bits;
  int log2_world;          // the mean's exponent shift when W = 2^k (−1 otherwise)
  int log2_world_ceiling;  // ⌈log2 W⌉: the bits a sum of W addends may grow by
  // The units and staged kernels' (args_of):
  bool mean;
  bool divide;          // mean with W not a power of two: the double quotient
  double scale[2];      // what a unit's sums are multiplied by: even elements, odd elements
  double reciprocal;    // 1 / W rounded to nearest, for the divided mean (odd_quotient)
  std::uint32_t reach;  // bf16's window check (law_lanes), both lanes
  std::uint32_t cap;
};

template <bool kF16>
using FormatOf = std::conditional_t<kF16, Float16Format, BFloat16Format>;

// What the one pass keeps of one element's addends (as exact_stacked_kernel.cu's).
struct ElementSum {
  double sum = 0.0;           // Σ x in double, started by slot 0's addend (add's `first`)
  std::uint32_t largest = 0;  // the largest |x| as bits (NaN and ±Inf patterns are the largest)
  std::uint32_t smallest_less_one = 0xFFFFFFFFu;  // the smallest nonzero |x| as bits, minus 1
};

// `first`: x is slot 0's addend, and the sum starts as x itself. That is the law's sum from
// −0 (−0 + x = x for every x, −0 included), without relying on a −0 start value that every
// shape would have to set: a shape whose sums start as an array of these structs, zeroed,
// would give +0 for a sum of −0s where the law gives −0.
__device__ __forceinline__ void add(ElementSum& e, float x, bool first) {
  const std::uint32_t magnitude = float_bits(x) & 0x7FFFFFFFu;
  e.largest = max(e.largest, magnitude);
  e.smallest_less_one = min(e.smallest_less_one, magnitude - 1u);  // ±0 wraps: never the min
  e.sum = first ? static_cast<double>(x) : __dadd_rn(e.sum, static_cast<double>(x));
}

// max(biased exponent, 1) of a binary32 magnitude: its bits lie in [e − 1, e + 22].
__device__ __forceinline__ int exponent_of(std::uint32_t magnitude_bits) {
  return max(static_cast<int>(magnitude_bits >> 23), 1);
}

__device__ __forceinline__ double power_of_two(int k) {
  return __longlong_as_double(static_cast<long long>(k + 1023) << 52);
}

// y rounded to binary32 by rounding to odd (see the top of the file).
__device__ __forceinline__ float round_to_odd(double y) {
  const float truncated = __double2float_rz(y);
  const bool inexact = static_cast<double>(truncated) != y;  // NaN: stays a NaN either way
  return float_from_bits(float_bits(truncated) | (inexact ? 1u : 0u));
}

// The element's result from its one pass, in `result`; false when the double sum may not be
// exact (the law must take it: rare_element).
template <bool kF16, bool kMean, bool kPowerOfTwo>
__device__ __forceinline__ bool settle(const ElementSum& e, const ExactHalfArgs& a,
                                       std::uint16_t& result) {
  using F = FormatOf<kF16>;
  const int largest = exponent_of(e.largest);
  const int scale = exponent_of(e.smallest_less_one + 1u) - 1;
  const int bottom = max(scale + 24 - F::kPrecision, F::kLsbMin);
  // Every partial sum is a multiple of 2^(bottom − 149) below 2^(largest + 23 + ⌈log2 W⌉ − 149):
  // exact in double when that spans at most 53 bits. A non-finite sum came from a NaN or ±Inf
  // addend (finite halves cannot overflow a double) and follows the law's special rules.
  if (isfinite(e.sum) && largest + 23 + a.log2_world_ceiling - bottom > 53) return false;
  double y = e.sum;
  if (kMean && y != 0.0 && isfinite(y)) {
    y = kPowerOfTwo ? __dmul_rn(y, power_of_two(-a.log2_world))
                    : __ddiv_rn(y, static_cast<double>(a.world));
  }
  result = half_kernel_detail::narrow<kF16>(round_to_odd(y));
  return true;
}

// One element the double could not settle, by the law, its W addends re-read: the agreement
// words and window the live reducers would form had its block held it alone, its digits added
// into the wide sum, the special words summed, rounded once to the dtype. Out of line, so that
// its registers do not weigh on the common path's occupancy.
template <bool kF16>
__device__ __forceinline__ std::uint16_t law_of_element(const HalfTable& t, const ExactHalfArgs& a,
                                                        std::size_t i, bool mean) {
  using half_kernel_detail::load_element;
  using half_kernel_detail::widen;
  exact::AgreementWords words;
  for (std::uint32_t r = 0; r < t.world; ++r) {
    exact::widen_agreement(words, float_bits(widen<kF16>(load_element(t, r, i))));
  }
  const exact::Window window = exact::window_of(words, t.world);
  exact::ExactSum s{};
  std::int64_t special = 0;
  for (std::uint32_t r = 0; r < t.world; ++r) {
    const std::uint32_t bits = float_bits(widen<kF16>(load_element(t, r, i)));
    if (window.special) special += exact::special_word_of(bits);
    const exact::Digits d = exact::digits_of(bits, window.bottom, a.limb_bits);
    if (d.first_limb < 0) continue;
    exact::add_shifted(s, d.low, d.first_limb * a.limb_bits);
    if (d.high != 0) exact::add_shifted(s, d.high, (d.first_limb + 1) * a.limb_bits);
  }
  return static_cast<std::uint16_t>(exact::round_exact_sum<FormatOf<kF16>>(
      s, window.bottom, t.world, mean, window.special, special));
}

template <bool kF16>
__device__ __noinline__ std::uint16_t rare_element(const HalfTable& t, const ExactHalfArgs& a,
                                                   std::size_t i, bool mean) {
  return law_of_element<kF16>(t, a, i, mean);
}

// One element, every slot in turn: the edges and the scalar path.
template <bool kF16, bool kMean, bool kPowerOfTwo>
__device__ __forceinline__ std::uint16_t exact_element(const HalfTable& t, const ExactHalfArgs& a,
                                                       std::size_t i) {
  ElementSum e;
  for (std::uint32_t r = 0; r < t.world; ++r) {
    add(e, half_kernel_detail::widen<kF16>(half_kernel_detail::load_element(t, r, i)), r == 0);
  }
  std::uint16_t result;
  if (settle<kF16, kMean, kPowerOfTwo>(e, a, result)) return result;
  return rare_element<kF16>(t, a, i, kMean);
}

// What settle and the rare path make of one unit's sums: the unit stored whole when every
// element settled; otherwise the settled elements, then the rare ones (their addends, slot 0's
// included, which the output may alias, are still unwritten).
template <bool kF16, bool kMean, bool kPowerOfTwo>
__device__ __forceinline__ void finish_unit(const HalfTable& t, const ExactHalfArgs& a,
                                            std::size_t u, const ElementSum (&e)[kUnit]) {
  using half_kernel_detail::half_of;
  Unit result{};
  unsigned rare = 0;
#pragma unroll
  for (int k = 0; k < static_cast<int>(kUnit); ++k) {
    std::uint16_t h = 0;
    if (!settle<kF16, kMean, kPowerOfTwo>(e[k], a, h)) rare |= 1u << k;
    half_kernel_detail::pack(result, k, h);
  }
  if (rare == 0) {
    half_kernel_detail::store_unit(t, u, result);
    return;
  }
  const std::size_t first = t.head + kUnit * u;
#pragma unroll
  for (int k = 0; k < static_cast<int>(kUnit); ++k) {
    if (!((rare >> k) & 1u)) half_kernel_detail::store_element(t, first + k, half_of(result, k));
  }
  for (int k = 0; k < static_cast<int>(kUnit); ++k) {
    if ((rare >> k) & 1u) {
      half_kernel_detail::store_element(t, first + k, rare_element<kF16>(t, a, first + k, kMean));
    }
  }
}

// A thread takes kUnits units at a time (units u and u + the grid's threads, so a warp's loads
// stay contiguous), the loads of 4 / kUnits slots of all of them issued before any is added:
// 64 bytes in flight per thread either way once W ≥ 4, and at W = 2 twice as many with two
// units. kMinBlocks: resident blocks of kThreads per SM the registers are capped for (one unit:
// 3, at most 85 registers, where ptxas alone takes 92 and leaves 2 blocks; two units: 2).
template <bool kF16, bool kMean, bool kPowerOfTwo, int kUnits, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    exact_stacked_half_kernel(HalfTable t, ExactHalfArgs a) {
  using half_kernel_detail::half_of;
  using half_kernel_detail::widen;
  constexpr std::uint32_t kSlotsInFlight = 4 / kUnits;
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;

  for (std::size_t first = thread; first < t.units; first += threads * kUnits) {
    ElementSum e[kUnits][kUnit];
    for (std::uint32_t r = 0; r < t.world; r += kSlotsInFlight) {
      Unit held[kSlotsInFlight][kUnits];
#pragma unroll
      for (std::uint32_t j = 0; j < kSlotsInFlight; ++j) {
#pragma unroll
        for (int v = 0; v < kUnits; ++v) {
          const std::size_t u = first + v * threads;
          if (r + j < t.world && u < t.units)
            held[j][v] = half_kernel_detail::load_unit(t, r + j, u);
        }
      }
#pragma unroll
      for (std::uint32_t j = 0; j < kSlotsInFlight; ++j) {
        if (r + j >= t.world) break;
#pragma unroll
        for (int v = 0; v < kUnits; ++v) {
          if (first + v * threads >= t.units) break;
#pragma unroll
          for (int k = 0; k < static_cast<int>(kUnit); ++k) {
            add(e[v][k], widen<kF16>(half_of(held[j][v], k)), r + j == 0);
          }
        }
      }
    }
#pragma unroll
    for (int v = 0; v < kUnits; ++v) {
      const std::size_t u = first + v * threads;
      if (u >= t.units) break;
      finish_unit<kF16, kMean, kPowerOfTwo>(t, a, u, e[v]);
    }
  }

  for (std::size_t i = thread; i < t.head; i += threads) {
    half_kernel_detail::store_element(t, i, exact_element<kF16, kMean, kPowerOfTwo>(t, a, i));
  }
  const std::size_t tail = t.head + kUnit * t.units;
  for (std::size_t i = tail + thread; i < t.n; i += threads) {
    half_kernel_detail::store_element(t, i, exact_element<kF16, kMean, kPowerOfTwo>(t, a, i));
  }
}

template <bool kF16, int kUnits, int kMinBlocks>
void launch_for(const HalfTable& table, const ExactHalfArgs& args, Op op, cudaStream_t stream) {
  const auto launch = [&](auto kernel) {
    const std::size_t work = table.units != 0 ? (table.units + kUnits - 1) / kUnits : table.n;
    const unsigned blocks = cuda_detail::resident_grid(reinterpret_cast<const void*>(kernel),
                                                       kThreads, (work + kThreads - 1) / kThreads);
    kernel<<<blocks, kThreads, 0, stream>>>(table, args);
    RV_CUDA_CHECK_LAUNCH("exact_stacked_half_kernel");
  };
  if (op == Op::kSum) {
    launch(exact_stacked_half_kernel<kF16, false, false, kUnits, kMinBlocks>);
  } else if (args.log2_world >= 0) {
    launch(exact_stacked_half_kernel<kF16, true, true, kUnits, kMinBlocks>);
  } else {
    launch(exact_stacked_half_kernel<kF16, true, false, kUnits, kMinBlocks>);
  }
}

// ---- The units and staged kernels (issue 37) ---------------------------------------------
//
// The loads of fixed_order/fold_half_kernel.cu's units kernel (half_kernel_detail::load_round)
// or its staged kernel (staged_units), the method of the kernel above, with less work per element:
// * The window on packed pairs. Per word of a unit, the two elements' largest magnitude and
//   smallest magnitude less one (mod 2^16: a ±0 gives 0xFFFF, never the minimum unless every
//   addend is ±0) are kept as 16-bit lanes, with the 16-bit SIMD max and add-min of sm_90
//   (VIMNMX.U16x2, VIADDMNMX.U16x2; emulated before). A unit's doubles are all taken when, for
//   every element, the largest magnitude l and the smallest less one s satisfy
//   l ≤ s + (D << 7), D = 45 − ⌈log2 W⌉ (bf16; law_lanes): l's exponent is then at most s's
//   plus D, and s's exponent at most the smallest addend's, so the addends span at most D
//   binades, which is the kernel above's condition for an exact double sum (its
//   largest + 23 + ⌈log2 W⌉ − bottom ≤ 53 with bottom = scale + 16). f16 sums below W = 2^13
//   are always exact (the top of the file), so f16 keeps only l, for the specials. A unit with
//   an element with a NaN or ±Inf addend (l ≥ the Inf pattern) or a wider window is finished
//   element by element as the kernel above finishes its edges (exact_edge, which takes the
//   law where the double cannot).
// * The one rounding straight from the double: round_double (one conversion on sm_90), no
//   NaN to canonicalise (NaN sums never reach it).
// * kScaled (a mask: 1 the even elements, the low half of each word; 2 the odd ones; 3 both;
//   hybrid is 2, integer 3): those elements converted to double by integer instructions
//   instead of cvt.f64.f32, whose rate on sm_90 is a quarter of the integer units': the
//   bits (s, e, m) of a bf16 placed as a double's sign, low exponent bits and top mantissa
//   bits are the double x × 2^-896 for every finite x (a bf16 subnormal becomes the double
//   subnormal m × 2^-1029 = x × 2^-896; ±0 stays ±0); for f16 the same with 2^-1008. Their
//   sums are exact under the same window (below 2^-1022 a double's grid is 2^-1074, finer than
//   any of these values), so the sum times 2^896 (or 2^1008), a power of two, is the exact
//   sum. A NaN or ±Inf becomes a finite double here: such units go element by element anyway.
// The mean: the sums times 2^-k for W = 2^k (the rescale and the mean in one multiplication,
// exact), else the quotient rounded to odd in binary64 (core/exact/odd_quotient.h: a
// multiplication and FMAs, no division), whose one rounding to the dtype is the true mean's.

// A unit's sums and its window.
struct UnitSums {
  double sum[kUnit];
  std::uint32_t largest[kUnit / 2];            // per word: both elements' largest magnitude
  std::uint32_t smallest_less_one[kUnit / 2];  // per word: both elements' smallest magnitude − 1
};

// One element of a word (kHigh: its high half) as a double: exact. kScaled: by integer
// instructions, the value x × 2^-896 (bf16) or x × 2^-1008 (f16).
template <bool kF16, bool kHigh, bool kScaled>
__device__ __forceinline__ double to_double(std::uint32_t w) {
  if constexpr (kScaled) {
    // The element in the word's top half; an arithmetic shift puts its sign in bit 31 and its
    // exponent's lowest bit at bit 20, the double's.
    const std::uint32_t top = kHigh ? w : w << 16;
    const auto shifted =
        static_cast<std::uint32_t>(static_cast<std::int32_t>(top) >> (kF16 ? 6 : 3));
    return __hiloint2double(static_cast<int>(shifted & (kF16 ? 0x81FFFC00u : 0x8FFFE000u)), 0);
  } else {
    const float2 v = half_kernel_detail::widen_pair<kF16>(w);
    return static_cast<double>(kHigh ? v.y : v.x);
  }
}

// One unit of one slot added into the unit's sums (kFirst: slot 0's, which starts them: the
// law's sum from −0, as add() above).
template <bool kF16, int kScaled, bool kFirst>
__device__ __forceinline__ void add_unit(UnitSums& s, const Unit& x) {
#pragma unroll
  for (int j = 0; j < static_cast<int>(kUnit / 2); ++j) {
    const std::uint32_t w = x.w[j];
    const std::uint32_t magnitudes = w & 0x7FFF7FFFu;
    s.largest[j] = exact::lane_max(s.largest[j], magnitudes);
    if constexpr (!kF16) {
      s.smallest_less_one[j] =
          exact::lane_min(s.smallest_less_one[j], __vsub2(magnitudes, 0x00010001u));
    }
    const double low = to_double<kF16, false, (kScaled & 1) != 0>(w);
    const double high = to_double<kF16, true, (kScaled & 2) != 0>(w);
    if constexpr (kFirst) {
      s.sum[2 * j] = low;
      s.sum[2 * j + 1] = high;
    } else {
      s.sum[2 * j] = __dadd_rn(s.sum[2 * j], low);
      s.sum[2 * j + 1] = __dadd_rn(s.sum[2 * j + 1], high);
    }
  }
}

__device__ __forceinline__ void start_window(UnitSums& s) {
#pragma unroll
  for (int j = 0; j < static_cast<int>(kUnit / 2); ++j) {
    s.largest[j] = 0;
    s.smallest_less_one[j] = 0xFFFFFFFFu;
  }
}

// Per word, both lanes: bit 15 of a lane set when its element must take the law (a NaN or
// ±Inf addend; for bf16 also a window the double may not hold: core/exact/half_window.h).
template <bool kF16>
__device__ __forceinline__ std::uint32_t law_lanes(const UnitSums& s, const ExactHalfArgs& a,
                                                   int j) {
  if constexpr (kF16) {
    return s.largest[j] + (0x8000u - 0x7C00u) * 0x00010001u;
  } else {
    return exact::flagged_lanes(s.largest[j], s.smallest_less_one[j],
                                exact::LaneWindow{a.reach, a.cap});
  }
}

// The result of element e (0: the low half of a word, 1: the high half) from its double: the
// rescale (kScaled's elements) and the mean, then the one rounding.
template <bool kF16, int kScaled>
__device__ __forceinline__ std::uint16_t settled(double y, const ExactHalfArgs& a, int e) {
  if (kScaled != 0 || a.mean) y = __dmul_rn(y, a.scale[(kScaled >> e) & 1]);
  if (a.divide) y = exact::odd_quotient(y, static_cast<double>(a.world), a.reciprocal);
  return half_kernel_detail::round_double<kF16>(y);
}

// What the element-wise path needs of the table and the arguments, small enough to pass by
// value to an out-of-line call without weighing on the caller's registers (a kernel parameter
// passed by reference would need an address, which puts the parameters in local memory).
struct ElementArgs {
  const unsigned char* stacked;
  std::size_t stride;
  std::uint32_t world;
  int limb_bits;
  int log2_world;
  int log2_world_ceiling;
  bool bytewise;
  bool mean;
  bool divide;
};

__device__ __forceinline__ ElementArgs element_args(const HalfTable& t, const ExactHalfArgs& a) {
  return ElementArgs{t.stacked,  t.stride, t.world, a.limb_bits, a.log2_world, a.log2_world_ceiling,
                     t.bytewise, a.mean,   a.divide};
}

// Element i by itself, as the first kernel's edges: its W addends (requested 8 at a time)
// summed in double, settled as the first kernel settles, or by the law (rare_element's
// computation) where the double cannot. The units kernels' edges, and every element of a unit
// one of whose elements must take the law.
template <bool kF16>
__device__ __noinline__ std::uint16_t exact_edge(ElementArgs e, std::size_t i) {
  HalfTable t{};
  t.stacked = e.stacked;
  t.stride = e.stride;
  t.world = e.world;
  t.bytewise = e.bytewise;
  ExactHalfArgs a{};
  a.world = e.world;
  a.limb_bits = e.limb_bits;
  a.log2_world = e.log2_world;
  a.log2_world_ceiling = e.log2_world_ceiling;
  constexpr std::uint32_t kLoads = 8;
  ElementSum sum;
  for (std::uint32_t r = 0; r < t.world; r += kLoads) {
    std::uint16_t h[kLoads];
#pragma unroll
    for (std::uint32_t b = 0; b < kLoads; ++b) {
      if (r + b < t.world) h[b] = half_kernel_detail::load_element(t, r + b, i);
    }
#pragma unroll
    for (std::uint32_t b = 0; b < kLoads; ++b) {
      if (r + b >= t.world) break;
      add(sum, half_kernel_detail::widen<kF16>(h[b]), r + b == 0);
    }
  }
  std::uint16_t result = 0;
  const bool settled = !e.mean     ? settle<kF16, false, false>(sum, a, result)
                       : !e.divide ? settle<kF16, true, true>(sum, a, result)
                                   : settle<kF16, true, false>(sum, a, result);
  return settled ? result : law_of_element<kF16>(t, a, i, e.mean);
}

// The elements of a unit one of whose elements must take the law (rare), element by element
// (exact_edge: each reads its own addends before its own result is written, so an output
// aliasing slot 0 is safe). One call for the unit: its registers, and the caller's saved
// around it, stay off the common path.
template <bool kF16>
__device__ __noinline__ void finish_elementwise(ElementArgs e, unsigned char* out,
                                                std::size_t first) {
  for (int k = 0; k < static_cast<int>(kUnit); ++k) {
    const std::uint16_t h = exact_edge<kF16>(e, first + k);
    unsigned char* p = out + 2 * (first + k);
    if (e.bytewise) {
      p[0] = static_cast<unsigned char>(h);
      p[1] = static_cast<unsigned char>(h >> 8);
    } else {
      *reinterpret_cast<std::uint16_t*>(p) = h;
    }
  }
}

// A unit's results: one rounding of each double (rescaled, and the mean); false, nothing
// written, when an element must take the law (the caller's finish_elementwise).
template <bool kF16, int kScaled>
__device__ __forceinline__ bool settle_unit(const HalfTable& t, const ExactHalfArgs& a,
                                            std::size_t u, const UnitSums& s) {
  std::uint32_t flagged = 0;
#pragma unroll
  for (int j = 0; j < static_cast<int>(kUnit / 2); ++j) flagged |= law_lanes<kF16>(s, a, j);
  if (__builtin_expect((flagged & 0x80008000u) != 0, 0)) return false;
  Unit result;
#pragma unroll
  for (int j = 0; j < static_cast<int>(kUnit / 2); ++j) {
    result.w[j] =
        static_cast<std::uint32_t>(settled<kF16, kScaled>(s.sum[2 * j], a, 0)) |
        (static_cast<std::uint32_t>(settled<kF16, kScaled>(s.sum[2 * j + 1], a, 1)) << 16);
  }
  half_kernel_detail::store_unit(t, u, result);
  return true;
}

// settle_unit, or finish_elementwise in its place.
template <bool kF16, int kScaled>
__device__ __forceinline__ void finish_units_unit(const HalfTable& t, const ExactHalfArgs& a,
                                                  std::size_t u, const UnitSums& s) {
  if (!settle_unit<kF16, kScaled>(t, a, u, s)) {
    finish_elementwise<kF16>(element_args(t, a), t.out, t.head + kUnit * u);
  }
}

// One round of the thread's units: slots r … r + kSlots − 1, requested together, then
// realigned and added in ascending slot order.
template <bool kF16, int kScaled, int kSlots, int kUnits, bool kFirst>
__device__ __forceinline__ void add_round(const HalfTable& t, std::uint32_t r, std::size_t first,
                                          std::size_t threads, const std::uint32_t (&phase)[kSlots],
                                          const half_kernel_detail::Chunks (&held)[kSlots][kUnits],
                                          UnitSums (&s)[kUnits]) {
#pragma unroll
  for (int b = 0; b < kSlots; ++b) {
    if (r + b >= t.world) break;
#pragma unroll
    for (int v = 0; v < kUnits; ++v) {
      if (first + v * threads < t.units) {
        const Unit x = half_kernel_detail::realign(held[b][v], phase[b]);
        if (kFirst && b == 0) {
          add_unit<kF16, kScaled, true>(s[v], x);
        } else {
          add_unit<kF16, kScaled, false>(s[v], x);
        }
      }
    }
  }
}

template <bool kF16>
__device__ __forceinline__ void exact_edges(const HalfTable& t, const ExactHalfArgs& a,
                                            std::size_t thread, std::size_t threads) {
  const std::size_t edges = half_kernel_detail::edge_count(t);
  for (std::size_t e = threads - 1 - thread; e < edges; e += threads) {
    const std::size_t i = half_kernel_detail::edge_element(t, e);
    half_kernel_detail::store_element(t, i, exact_edge<kF16>(element_args(t, a), i));
  }
}

// kSlots slots' loads of kUnits units in flight, then added; the units finished after the
// last round.
template <bool kF16, int kScaled, int kSlots, int kUnits, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    exact_units_kernel(HalfTable t, ExactHalfArgs a) {
  using half_kernel_detail::Chunks;
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;

  for (std::size_t first = thread; first < t.units; first += threads * kUnits) {
    UnitSums s[kUnits];
#pragma unroll
    for (int v = 0; v < kUnits; ++v) start_window(s[v]);
    {
      std::uint32_t phase[kSlots];
      Chunks held[kSlots][kUnits];
      half_kernel_detail::load_round(t, 0, first, threads, phase, held);
      add_round<kF16, kScaled, kSlots, kUnits, true>(t, 0, first, threads, phase, held, s);
    }
    for (std::uint32_t r = kSlots; r < t.world; r += kSlots) {
      std::uint32_t phase[kSlots];
      Chunks held[kSlots][kUnits];
      half_kernel_detail::load_round(t, r, first, threads, phase, held);
      add_round<kF16, kScaled, kSlots, kUnits, false>(t, r, first, threads, phase, held, s);
    }
#pragma unroll
    for (int v = 0; v < kUnits; ++v) {
      const std::size_t u = first + v * threads;
      if (u < t.units) finish_units_unit<kF16, kScaled>(t, a, u, s[v]);
    }
  }
  exact_edges<kF16>(t, a, thread, threads);
}

// Where a thread is in the table: unit `first`, round `r`.
struct Job {
  std::size_t first;
  std::uint32_t r;
};

// One step of the pipelined kernel: the next job's loads into `next` (when there is one),
// then this job's chunks `held` added (and the unit finished after its last round). Returns
// whether there is a next job; `job` becomes it.
template <bool kF16, int kScaled, int kSlots>
__device__ __forceinline__ bool pipelined_step(const HalfTable& t, const ExactHalfArgs& a,
                                               std::size_t threads, Job& job,
                                               const std::uint32_t (&phase)[kSlots],
                                               const half_kernel_detail::Chunks (&held)[kSlots][1],
                                               std::uint32_t (&next_phase)[kSlots],
                                               half_kernel_detail::Chunks (&next)[kSlots][1],
                                               UnitSums (&s)[1]) {
  const bool last_round = job.r + kSlots >= t.world;
  const Job following = last_round ? Job{job.first + threads, 0} : Job{job.first, job.r + kSlots};
  const bool more = following.first < t.units;
  if (more)
    half_kernel_detail::load_round(t, following.r, following.first, threads, next_phase, next);
  if (job.r == 0) {
    start_window(s[0]);
    add_round<kF16, kScaled, kSlots, 1, true>(t, 0, job.first, threads, phase, held, s);
  } else {
    add_round<kF16, kScaled, kSlots, 1, false>(t, job.r, job.first, threads, phase, held, s);
  }
  if (last_round) finish_units_unit<kF16, kScaled>(t, a, job.first, s[0]);
  job = following;
  return more;
}

// One unit a thread, kSlots slots a round, the next round's (or the next unit's first round's)
// loads issued before this round is added: two buffers of chunks, used in turn.
template <bool kF16, int kScaled, int kSlots, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    exact_pipelined_kernel(HalfTable t, ExactHalfArgs a) {
  using half_kernel_detail::Chunks;
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;

  Job job{thread, 0};
  if (job.first < t.units) {
    std::uint32_t phase_a[kSlots], phase_b[kSlots];
    Chunks held_a[kSlots][1], held_b[kSlots][1];
    UnitSums s[1];
    half_kernel_detail::load_round(t, 0, job.first, threads, phase_a, held_a);
    while (pipelined_step<kF16, kScaled, kSlots>(t, a, threads, job, phase_a, held_a, phase_b,
                                                 held_b, s) &&
           pipelined_step<kF16, kScaled, kSlots>(t, a, threads, job, phase_b, held_b, phase_a,
                                                 held_a, s)) {
    }
  }
  exact_edges<kF16>(t, a, thread, threads);
}

// One staged walk from `job` with its own sums (so that a walk's registers never live across
// another walk's calls): kDefer sets units for the law aside in `queue`, otherwise they are
// finished in place.
template <bool kF16, int kScaled, int kSlots, int kStages, bool kDefer>
__device__ __forceinline__ half_kernel_detail::StagedJob staged_walk(
    const HalfTable& t, const ExactHalfArgs& a, half_kernel_detail::StagedJob job,
    half_kernel_detail::WarpStages<kSlots, kStages>& mine, std::size_t* queue, unsigned& queued) {
  UnitSums s;
  const auto add = [&](const Unit& x, bool first) {
    if (first) {
      start_window(s);
      add_unit<kF16, kScaled, true>(s, x);
    } else {
      add_unit<kF16, kScaled, false>(s, x);
    }
  };
  return half_kernel_detail::staged_units<kSlots, kStages, kDefer>(
      t, job, mine, queue, queued, add, [&](std::size_t u) {
        if constexpr (kDefer) {
          return !settle_unit<kF16, kScaled>(t, a, u, s);
        } else {
          finish_units_unit<kF16, kScaled>(t, a, u, s);
          return false;
        }
      });
}

// The units kernel's work with the loads staged through shared memory
// (half_kernel_detail::staged_units): kSlots slots a round, kStages − 1 rounds in flight, no
// chunk held in registers while it is in flight. kDefer: a unit that must go element by element
// is set aside and finished after the walk, which stops when the warp's queue fills and is
// followed by a walk without deferral over the rest (so a table full of specials is slow, but
// right), so that no call sits in the first walk's loop: a call there makes every value live
// across it a spill in the loop (ptxas -v: 240 bytes at 80 registers), and without one the
// kernel fits 3 blocks an SM (kMinBlocks, 80 registers) instead of 2.
template <bool kF16, int kScaled, int kSlots, int kStages, bool kDefer, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    exact_staged_kernel(HalfTable t, ExactHalfArgs a) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __shared__ half_kernel_detail::WarpStages<kSlots, kStages> stages[half_kernel_detail::kWarps];
  half_kernel_detail::WarpStages<kSlots, kStages>& mine = stages[warp];
  half_kernel_detail::StagedJob job{blockIdx.x * half_kernel_detail::kWarps + warp, 0};
  unsigned none = 0;
  if constexpr (kDefer) {
    __shared__ std::size_t queues[half_kernel_detail::kWarps][half_kernel_detail::kQueue];
    std::size_t* queue = queues[warp];
    unsigned queued = 0;
    job = staged_walk<kF16, kScaled, kSlots, kStages, true>(t, a, job, mine, queue, queued);
    // The set-aside units' outputs are unwritten and their addends untouched: element by
    // element now, a unit a lane.
    for (unsigned q = lane; q < queued; q += 32) {
      finish_elementwise<kF16>(element_args(t, a), t.out,
                               t.head + half_kernel_detail::kUnit * queue[q]);
    }
    // The queue filled (many units for the law, as on tables full of specials): the rest
    // finished in place.
  }
  staged_walk<kF16, kScaled, kSlots, kStages, false>(t, a, job, mine, nullptr, none);
  exact_edges<kF16>(t, a, thread, threads);
}

// ---- The vector kernel (aligned tables) -------------------------------------------------
//
// Where every slot and the output share one phase (HalfPath::kVector), no unit needs
// realigning, and the simplest walk serves: a thread takes one unit, issues the loads of kSlots
// slots (one 16-byte load each, kept in registers) before adding any, and the grid covers the
// units with one unit a thread (no grid-stride loop, no phase per slot, no shared memory),
// registers capped for kMinBlocks resident blocks of kThreads an SM (3: 80 registers and 16
// bytes spilled a thread; 4: 64 and 76). A unit whose window the double cannot hold breaks the
// thread's walk: it is finished element by element outside the loop, so that no call sits
// inside it and no value of the loop lives across one.
template <bool kF16, int kSlots, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    exact_vector_kernel(HalfTable t, ExactHalfArgs a) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t u = thread;
  while (u < t.units) {
    bool flagged = false;
    for (; u < t.units; u += threads) {
      const unsigned char* base = half_kernel_detail::unit_base(t, u);
      UnitSums s;
      start_window(s);
      for (std::uint32_t r = 0; r < t.world; r += kSlots) {
        Unit held[kSlots];
        half_kernel_detail::load_aligned_round<kSlots>(t, base, r, held);
#pragma unroll
        for (int b = 0; b < kSlots; ++b) {
          if (r + b >= t.world) break;
          const Unit& x = held[b];
          if (r + b == 0) {
            add_unit<kF16, 0, true>(s, x);
          } else {
            add_unit<kF16, 0, false>(s, x);
          }
        }
      }
      if (!settle_unit<kF16, 0>(t, a, u, s)) {
        flagged = true;
        break;
      }
    }
    if (!flagged) break;
    finish_elementwise<kF16>(element_args(t, a), t.out, t.head + kUnit * u);
    u += threads;
  }
  exact_edges<kF16>(t, a, thread, threads);
}

template <bool kF16>
void launch_shaped(const HalfTable& table, const ExactHalfArgs& args, Op op, cudaStream_t stream,
                   detail::HalfExactShape shape) {
  const auto launch = [&](auto kernel, std::size_t units_per_thread, const char* name) {
    if (shape == detail::HalfExactShape::kStaged2x4 ||
        shape == detail::HalfExactShape::kStaged2x4Hybrid ||
        shape == detail::HalfExactShape::kStaged2x4Integer ||
        shape == detail::HalfExactShape::kStaged2x4Deferred ||
        shape == detail::HalfExactShape::kStaged4x2) {
      half_kernel_detail::prefer_shared_memory(reinterpret_cast<const void*>(kernel));
    }
    kernel<<<half_kernel_detail::grid_for_units(kernel, table, units_per_thread), kThreads, 0,
             stream>>>(table, args);
    RV_CUDA_CHECK_LAUNCH(name);
  };
  switch (shape) {
    case detail::HalfExactShape::kOneUnit:
      return launch_for<kF16, 1, 3>(table, args, op, stream);
    case detail::HalfExactShape::kTwoUnits:
      return launch_for<kF16, 2, 2>(table, args, op, stream);
    case detail::HalfExactShape::kSlots4:
      return launch(exact_units_kernel<kF16, 0, 4, 1, 2>, 1, "exact_units_kernel<4x1>");
    case detail::HalfExactShape::kSlots2Pipelined:
      return launch(exact_pipelined_kernel<kF16, 0, 2, 2>, 1, "exact_pipelined_kernel<2>");
    case detail::HalfExactShape::kStaged2x4:
      return launch(exact_staged_kernel<kF16, 0, 2, 4, false, 2>, 1, "exact_staged_kernel<2x4>");
    case detail::HalfExactShape::kStaged2x4Hybrid:
      return launch(exact_staged_kernel<kF16, 2, 2, 4, false, 2>, 1,
                    "exact_staged_kernel<2x4 hybrid>");
    case detail::HalfExactShape::kStaged4x2:
      return launch(exact_staged_kernel<kF16, 0, 4, 2, false, 2>, 1, "exact_staged_kernel<4x2>");
    case detail::HalfExactShape::kStaged2x4Deferred:
      return launch(exact_staged_kernel<kF16, 0, 2, 4, true, 3>, 1,
                    "exact_staged_kernel<2x4 deferred>");
    case detail::HalfExactShape::kStaged2x4Integer:
      return launch(exact_staged_kernel<kF16, 3, 2, 4, false, 2>, 1,
                    "exact_staged_kernel<2x4 integer>");
    case detail::HalfExactShape::kVector4:
    case detail::HalfExactShape::kVector4Blocks4: {
      // Aligned tables only; any other takes the staged kernel.
      if (!half_kernel_detail::aligned_units(table)) {
        return launch_shaped<kF16>(table, args, op, stream, detail::HalfExactShape::kStaged4x2);
      }
      const auto kernel = shape == detail::HalfExactShape::kVector4
                              ? exact_vector_kernel<kF16, 4, 3>
                              : exact_vector_kernel<kF16, 4, 4>;
      const unsigned blocks = static_cast<unsigned>((table.units + kThreads - 1) / kThreads);
      kernel<<<blocks, kThreads, 0, stream>>>(table, args);
      RV_CUDA_CHECK_LAUNCH("exact_vector_kernel<4>");
      return;
    }
  }
  throw InternalError("unknown half exact shape");
}

// k when W = 2^k, −1 otherwise.
int log2_if_power_of_two(std::uint32_t world) {
  const int k = exact::log2_ceiling(world);
  return (std::uint32_t{1} << k) == world ? k : -1;
}

ExactHalfArgs args_of(std::uint32_t world, Op op, DType dtype) {
  ExactHalfArgs a{};
  a.world = world;
  a.limb_bits = exact::limb_bits(world);
  a.log2_world = log2_if_power_of_two(world);
  a.log2_world_ceiling = exact::log2_ceiling(world);
  a.mean = op == Op::kMean;
  a.divide = a.mean && a.log2_world < 0;
  a.reciprocal = 1.0 / static_cast<double>(world);
  // Elements converted by cvt: the double is the value; by shifts (kScaled): the value times
  // 2^-896 or 2^-1008. A power-of-two mean's 2^-k joins the rescale.
  const int shift = a.mean && !a.divide ? a.log2_world : 0;
  a.scale[0] = std::ldexp(1.0, -shift);
  a.scale[1] = std::ldexp(1.0, (dtype == DType::kF16 ? 1008 : 896) - shift);
  // bf16's window in double (law_lanes): core/exact/half_window.h.
  const exact::LaneWindow double_window = exact::double_window_bf16(a.log2_world_ceiling);
  a.reach = double_window.reach;
  a.cap = double_window.cap;
  return a;
}

}  // namespace

namespace detail {

// vector-s4 (aligned tables; staged-s4x2 on every other) from W = 3, staged-s4x2 below: the
// shapes with the highest worst case over sum and mean, per W and layout, at 16 Mi and 128 Mi
// elements (docs/results.md, "Decisions behind the code"); every shape gives the same bits
// (gpu_half_stacked_kernel_test). f16 worlds past 2^13 still take one-unit (below).
HalfExactShape default_half_exact_shape(std::uint32_t world) {
  return world >= 3 ? HalfExactShape::kVector4 : HalfExactShape::kStaged4x2;
}

const char* to_string(HalfExactShape shape) {
  switch (shape) {
    case HalfExactShape::kOneUnit:
      return "one-unit";
    case HalfExactShape::kTwoUnits:
      return "two-units";
    case HalfExactShape::kSlots4:
      return "s4x1";
    case HalfExactShape::kSlots2Pipelined:
      return "s2-pipelined";
    case HalfExactShape::kStaged2x4:
      return "staged-s2x4";
    case HalfExactShape::kStaged2x4Hybrid:
      return "staged-s2x4-hybrid";
    case HalfExactShape::kStaged4x2:
      return "staged-s4x2";
    case HalfExactShape::kStaged2x4Integer:
      return "staged-s2x4-integer";
    case HalfExactShape::kStaged2x4Deferred:
      return "staged-s2x4-deferred";
    case HalfExactShape::kVector4:
      return "vector-s4";
    case HalfExactShape::kVector4Blocks4:
      return "vector-s4-4blocks";
  }
  return "unknown";
}

void cuda_exact_stacked_half_shaped(const void* d_stacked, std::uint32_t world,
                                    std::size_t slot_stride, std::size_t n, Op op, DType dtype,
                                    void* d_out, void* cuda_stream, HalfExactShape shape) {
  if (dtype == DType::kF32) {
    return launch_exact_reduce_stacked(static_cast<const float*>(d_stacked), world, slot_stride, n,
                                       op, static_cast<float*>(d_out), cuda_stream);
  }
  half_kernel_detail::check_half_table("cuda_exact_stacked_half", d_stacked, world, slot_stride, n,
                                       d_out);
  if (n == 0) return;
  const HalfTable table = half_kernel_detail::table_of(d_stacked, world, slot_stride, n, d_out);
  const ExactHalfArgs args = args_of(world, op, dtype);
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  // f16 sums are exact in double only below W = 2^13: the units kernels keep no window for f16.
  if (dtype == DType::kF16 && world > (1u << 13) && shape != HalfExactShape::kTwoUnits) {
    shape = HalfExactShape::kOneUnit;
  }
  if (dtype == DType::kF16) {
    launch_shaped<true>(table, args, op, stream, shape);
  } else {
    launch_shaped<false>(table, args, op, stream, shape);
  }
}

}  // namespace detail

void cuda_exact_stacked_half(const void* d_stacked, std::uint32_t world, std::size_t slot_stride,
                             std::size_t n, Op op, DType dtype, void* d_out, void* cuda_stream) {
  detail::cuda_exact_stacked_half_shaped(d_stacked, world, slot_stride, n, op, dtype, d_out,
                                         cuda_stream, detail::default_half_exact_shape(world));
}

}  // namespace rv
