// The stacked kernel: the exact contract over W slots already in one device's memory, in one
// launch and without the host (launch_exact_reduce_stacked, exact_kernel.h).
//
// The live reducers agree on one window per block of 1024 elements, because the library's
// all-reduce must be told how many int64 words to sum before any is sent. Here every addend
// is local, so each element can have its own window, found from its own W addends: any
// window that holds every addend's bits gives the same exact sum. Each thread takes 4
// consecutive elements at a time (8 for worlds of one or two slots) and, in one pass over the
// W slots, keeps per element
//   - the sum of the addends in double, from −0 (the identity that leaves an all −0 sum −0),
//   - the largest |x| and the smallest nonzero |x| as bit patterns (integer max and min).
// When those two exponents show that every partial sum was exact in double (the window from
// the smallest's lowest possible bit to W times the largest's highest fits 53 bits:
// gradient-like data, nearly always), the double is the exact sum and one conversion to
// float is its correct rounding: RNE, subnormals, overflow to ±Inf and the signs of zeros
// as IEEE gives them, which is the contract's law (docs/DESIGN.md §2.4). A non-finite double
// can only come from a NaN or ±Inf addend (finite floats cannot overflow a double sum of
// at most 2^20 of them), and IEEE double addition already follows the law's special rules:
// NaN (written canonical) for any NaN or both infinities, else the infinity. The mean is the
// exact sum scaled by 2^−k for W = 2^k (exact in double) and otherwise the correctly rounded
// double quotient. The rare rest (windows wider than a double, means below 2^-125) re-reads
// its W addends once the common results are stored: a window that fits one int64 limb sums W
// integer digits and rounds them as the round kernel does, any other takes the general law
// (agreement words, limbs, special word, the 7-word sum) as exact_law.h defines it.
// No thread waits for another, and nothing is held per slot, so worlds of any size take one
// pass over memory. The bits are those of core/exact/exact_reduction.h's
// exact_reduce_stacked: each is the correctly rounded value of the same exact sum (or
// sum / W), however it was built.
//
// Sums are built in double rather than as int64 digits of a window found first (values held
// in registers, converted and summed), which is slower (bench_cuda_exact BM_ExactStacked,
// docs/DESIGN.md §9; docs/results.md, "Decisions behind the code").
#include <cmath>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/cuda/exact/exact_kernel_detail.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"

namespace rv {
namespace {

using exact_kernel_detail::as_stream;
using exact_kernel_detail::check_pointer;
using exact_kernel_detail::grid_for;
using exact_kernel_detail::kThreads;
using exact_kernel_detail::log2_if_power_of_two;
using exact_kernel_detail::round_one_limb_mean_divided;
using exact_kernel_detail::round_one_limb_sum;

// How a thread walks the table (template arguments of the kernel and its helpers): kGroup
// consecutive elements at a time (kGroup / 4 float4s per slot where the slots allow it), the
// loads of kSlotsInFlight slots issued together before any is used. Larger worlds take 4
// elements from 4 slots at once; worlds of one or two slots 8 elements from both, so that a
// thread has as many loads in flight (8 elements at W = 2: docs/results.md, "Decisions behind
// the code").
constexpr int kVectorWidth = 4;

// Blocks of kThreads per SM the kernel is compiled for: 4 (64 registers) for groups of 4, 3
// (80 registers) for groups of 8, which spill at 64. Groups of 4 at 80 registers were slower
// at W = 2 and no faster at W = 4 and 8 (docs/results.md, "Decisions behind the code").
template <int kGroup>
constexpr int kMinBlocksPerSm = kGroup == 8 ? 3 : 4;

struct StackedArgs {
  const float* stacked;
  std::size_t slot_stride;
  std::size_t n;
  std::size_t groups;  // ⌈n / kGroup⌉ of the launched kernel
  float* out;
  std::uint32_t world;
  int limb_bits;
  int log2_world;            // the mean's exponent shift when W = 2^k
  int log2_world_ceiling;    // ⌈log2 W⌉: the bits a sum of W addends may grow by
  double reciprocal_double;  // 1 / W rounded to double, for the rare path's wide-sum mean
  bool vector;               // every slot's element 0 is 16-byte aligned: float4 loads
};

// The group's values of one slot as bits; elements past n read as +0 (never stored).
template <int kGroup>
__device__ __forceinline__ void load_group(const StackedArgs& a, std::uint32_t slot,
                                           std::size_t first, std::uint32_t bits[kGroup]) {
  const float* p = a.stacked + slot * a.slot_stride + first;
  const std::size_t left = a.n - first;
  if (a.vector && left >= kGroup) {
#pragma unroll
    for (int v = 0; v < kGroup; v += kVectorWidth) {
      const float4 q = *reinterpret_cast<const float4*>(p + v);
      bits[v] = float_bits(q.x);
      bits[v + 1] = float_bits(q.y);
      bits[v + 2] = float_bits(q.z);
      bits[v + 3] = float_bits(q.w);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kGroup; ++i)
    bits[i] = static_cast<std::size_t>(i) < left ? float_bits(p[i]) : 0u;
}

template <int kGroup>
__device__ __forceinline__ void store_group(const StackedArgs& a, std::size_t first,
                                            const std::uint32_t bits[kGroup]) {
  float* p = a.out + first;
  const std::size_t left = a.n - first;
  if (a.vector && left >= kGroup && reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
#pragma unroll
    for (int v = 0; v < kGroup; v += kVectorWidth) {
      *reinterpret_cast<float4*>(p + v) =
          make_float4(float_from_bits(bits[v]), float_from_bits(bits[v + 1]),
                      float_from_bits(bits[v + 2]), float_from_bits(bits[v + 3]));
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kGroup; ++i) {
    if (static_cast<std::size_t>(i) < left) p[i] = float_from_bits(bits[i]);
  }
}

// Slots r … r + kSlotsInFlight − 1 (those below W) of the group at `first`: every load of the
// round is issued before any is used.
template <int kGroup, std::uint32_t kSlotsInFlight>
__device__ __forceinline__ void load_round(const StackedArgs& a, std::uint32_t r, std::size_t first,
                                           std::uint32_t held[kSlotsInFlight][kGroup]) {
#pragma unroll
  for (std::uint32_t j = 0; j < kSlotsInFlight; ++j) {
    if (r + j < a.world) load_group<kGroup>(a, r + j, first, held[j]);
  }
}

// What the one pass keeps of one element's addends.
struct ElementSum {
  double sum = -0.0;          // Σ x in double: −0 + x = x for every x, +0 included
  std::uint32_t largest = 0;  // the largest |x| as bits (NaN and ±Inf patterns are the largest)
  std::uint32_t smallest_less_one = 0xFFFFFFFFu;  // the smallest nonzero |x| as bits, minus 1
};

__device__ __forceinline__ void add(ElementSum& e, std::uint32_t bits) {
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  e.largest = max(e.largest, magnitude);
  // magnitude − 1 wraps to 0xFFFFFFFF for ±0, which never lowers the minimum.
  e.smallest_less_one = min(e.smallest_less_one, magnitude - 1u);
  e.sum = __dadd_rn(e.sum, static_cast<double>(float_from_bits(bits)));
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

// 2^k as a double, for −1022 ≤ k ≤ 1023.
__device__ __forceinline__ double power_of_two(int k) {
  return __longlong_as_double(static_cast<long long>(k + 1023) << 52);
}

// One element the double pass could not settle (its addends are finite: the double sum was):
// a window wider than a double, or a mean below 2^-125. Its addends re-read: where its window
// [bottom, the largest's e + 22] fits one limb of limb_bits(W) bits, the W digits summed in one
// int64 and rounded as the round kernel's one-limb path does; otherwise the agreement words, window
// and digits as the live reducers would form them had its block held it alone, added into the wide
// sum, the special words summed, rounded. Out of line, so that its registers do not weigh on the
// common path's occupancy.
__device__ __noinline__ std::uint32_t rare_element(const float* x, std::size_t slot_stride,
                                                   std::uint32_t world, int limb_bits,
                                                   int log2_world, double reciprocal, int largest,
                                                   int bottom, bool mean) {
  if (largest + 23 - bottom <= limb_bits) {
    std::int64_t d = 0;
    for (std::uint32_t r = 0; r < world; ++r)
      d += one_limb_digit(float_bits(x[r * slot_stride]), bottom);
    if (!mean) return round_one_limb_sum(d, bottom);
    if (log2_world >= 0) return round_one_limb_sum(d, bottom - log2_world);
    return round_one_limb_mean_divided(d, bottom, world, reciprocal);
  }
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

// The result of an element whose double sum is exact (or not finite), as the law gives it, in
// `result`; false where the double cannot settle it and the law must (rare_element): a mean
// below 2^-125, where float rounds at 2^-149 rather than at 24 bits. For W that is not a power
// of two the mean is the correctly rounded double quotient y = sum / W, whose rounding to
// float is the true mean's (docs/DESIGN.md §2.4: a double quotient of an exact double sum by
// W < 2^29 falls on a float rounding boundary only when the true mean is that boundary).
// sum × (1/W rounded) would round twice and need a screen for quotients near a float
// midpoint, and means that are exact midpoints are common (a sum of a few floats has 25–27
// significant bits): the screen sent them to the law and cost two thirds of the kernel's
// speed at W = 3.
template <bool kMean, bool kPowerOfTwo>
__device__ __forceinline__ bool round_exact_double(double sum, const StackedArgs& a,
                                                   std::uint32_t& result) {
  // NaN (canonical), ±Inf, ±0 and every sum when op = sum: one correct rounding of the exact
  // value.
  if (!kMean || sum == 0.0 || !isfinite(sum)) {
    result = float_bits(canonicalize_nan(__double2float_rn(sum)));
    return true;
  }
  if constexpr (kPowerOfTwo) {
    result = float_bits(__double2float_rn(__dmul_rn(sum, power_of_two(-a.log2_world))));
    return true;
  } else {
    const double y = __ddiv_rn(sum, static_cast<double>(a.world));
    result = float_bits(__double2float_rn(y));
    return fabs(y) >= 0x1p-125;
  }
}

template <int kGroup, std::uint32_t kSlotsInFlight, bool kMean, bool kPowerOfTwo>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm<kGroup>)
    exact_stacked_kernel(StackedArgs a) {
  for (std::size_t g = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; g < a.groups;
       g += static_cast<std::size_t>(gridDim.x) * kThreads) {
    const std::size_t first = g * kGroup;

    ElementSum e[kGroup];
    for (std::uint32_t r = 0; r < a.world; r += kSlotsInFlight) {
      std::uint32_t held[kSlotsInFlight][kGroup];
      load_round<kGroup, kSlotsInFlight>(a, r, first, held);
#pragma unroll
      for (std::uint32_t j = 0; j < kSlotsInFlight; ++j) {
        if (r + j >= a.world) break;
#pragma unroll
        for (int i = 0; i < kGroup; ++i) add(e[i], held[j][i]);
      }
    }

    // Every partial sum was exact in double when each addend is a multiple of 2^(bottom − 149)
    // (bottom: the smallest's scale) and every partial sum stays below 2^(bottom − 149 + 53):
    // |partial| < W · 2^(largest's e + 23 − 149) ≤ 2^(e + 23 + ⌈log2 W⌉ − 149). A non-finite
    // sum (an addend was NaN or ±Inf) is rounded by the law's special rules alone.
    std::uint32_t result[kGroup];
    bool settled[kGroup];  // the double gave the law's bits
    bool every_settled = true;
#pragma unroll
    for (int i = 0; i < kGroup; ++i) {
      const int largest = exponent_of(e[i].largest);
      const int bottom = exponent_of(e[i].smallest_less_one + 1u) - 1;
      const bool exact = !isfinite(e[i].sum) || largest + 23 + a.log2_world_ceiling - bottom <= 53;
      settled[i] = round_exact_double<kMean, kPowerOfTwo>(e[i].sum, a, result[i]) && exact;
      every_settled = every_settled && settled[i];
    }
    if (every_settled) {
      store_group<kGroup>(a, first, result);
      continue;
    }
    // The rare rest, once the others are stored: their addends (slot 0's included, which the
    // output may alias) are still unwritten.
    unsigned rare = 0;
#pragma unroll
    for (int i = 0; i < kGroup; ++i) {
      if (first + i >= a.n) break;
      if (settled[i]) {
        a.out[first + i] = float_from_bits(result[i]);
      } else {
        rare |= 1u << i;
      }
    }
#pragma unroll
    for (int i = 0; i < kGroup; ++i) {
      if ((rare >> i) & 1u) {
        a.out[first + i] = float_from_bits(
            rare_element(a.stacked + first + i, a.slot_stride, a.world, a.limb_bits, a.log2_world,
                         a.reciprocal_double, exponent_of(e[i].largest),
                         exponent_of(e[i].smallest_less_one + 1u) - 1, kMean));
      }
    }
  }
}

// ⌈log2 W⌉.
template <int kGroup, std::uint32_t kSlotsInFlight>
void launch_shape(StackedArgs& args, Op op, void* cuda_stream) {
  args.groups = (args.n + kGroup - 1) / kGroup;
  const auto launch = [&](auto kernel) {
    kernel<<<grid_for(kernel, (args.groups + kThreads - 1) / kThreads), kThreads, 0,
             as_stream(cuda_stream)>>>(args);
    RV_CUDA_CHECK_LAUNCH("exact_stacked_kernel");
  };
  if (op == Op::kSum) {
    launch(exact_stacked_kernel<kGroup, kSlotsInFlight, false, false>);
  } else if (args.log2_world >= 0) {
    launch(exact_stacked_kernel<kGroup, kSlotsInFlight, true, true>);
  } else {
    launch(exact_stacked_kernel<kGroup, kSlotsInFlight, true, false>);
  }
}

}  // namespace

void launch_exact_reduce_stacked(const float* d_stacked, std::uint32_t world,
                                 std::size_t slot_stride, std::size_t n, Op op, float* d_out,
                                 void* cuda_stream) {
  constexpr const char* kWho = "launch_exact_reduce_stacked";
  check_stacked_table(kWho, world, slot_stride, n);
  if (n == 0) return;
  check_pointer(d_stacked, kWho, "the stacked addends");
  check_pointer(d_out, kWho, "the output");
  const auto address = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  StackedArgs args{d_stacked,
                   slot_stride,
                   n,
                   0,
                   d_out,
                   world,
                   exact::limb_bits(world),
                   log2_if_power_of_two(world),
                   exact::log2_ceiling(world),
                   1.0 / static_cast<double>(world),
                   address(d_stacked) % 16 == 0 && (world == 1 || slot_stride % 4 == 0)};
  if (world <= 2) {
    launch_shape<8, 2>(args, op, cuda_stream);
  } else {
    launch_shape<4, 4>(args, op, cuda_stream);
  }
}

}  // namespace rv
