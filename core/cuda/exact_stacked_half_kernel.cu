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
#include <cmath>
#include <cstdint>

#include "core/cuda/exact_kernel.h"
#include "core/cuda/half_kernel_detail.h"
#include "core/cuda/half_stacked_kernel.h"
#include "core/dtype_law.h"
#include "core/error.h"
#include "core/exact/exact_law.h"

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
// −0 (−0 + x = x for every x, −0 included), without relying on a −0 start value: the
// two-units shape, whose sums start as an array of these structs, returned +0 for sums of
// −0s on an H100 (issue 37) where this kernel's one-unit shape and the law give −0.
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
__device__ __noinline__ std::uint16_t rare_element(const HalfTable& t, const ExactHalfArgs& a,
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

template <bool kF16>
void launch_shaped(const HalfTable& table, const ExactHalfArgs& args, Op op, cudaStream_t stream,
                   detail::HalfExactShape shape) {
  if (shape == detail::HalfExactShape::kTwoUnits) {
    launch_for<kF16, 2, 2>(table, args, op, stream);
  } else {
    launch_for<kF16, 1, 3>(table, args, op, stream);
  }
}

// k when W = 2^k, −1 otherwise.
int log2_if_power_of_two(std::uint32_t world) {
  const int k = exact::log2_ceiling(world);
  return (std::uint32_t{1} << k) == world ? k : -1;
}

}  // namespace

namespace detail {

// Not yet measured against each other (bench_cuda_half compares them): one unit everywhere.
HalfExactShape default_half_exact_shape(std::uint32_t /*world*/) {
  return HalfExactShape::kOneUnit;
}

const char* to_string(HalfExactShape shape) {
  switch (shape) {
    case HalfExactShape::kOneUnit:
      return "one-unit";
    case HalfExactShape::kTwoUnits:
      return "two-units";
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
  const ExactHalfArgs args{world, exact::limb_bits(world), log2_if_power_of_two(world),
                           exact::log2_ceiling(world)};
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
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
