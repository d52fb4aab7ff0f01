#include "core/exact/stacked_in_double.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"
#include "core/exact/host_exact.h"
#include "core/exact/host_vector_targets.h"
#include "core/fold_law.h"

namespace rv {
namespace {

// Elements per chunk: the chunk's sums and magnitudes (16 bytes an element) stay in L1 while
// the W slots stream past.
constexpr std::size_t kChunk = 1024;

// What the pass keeps of one chunk: per element the double sum, the largest |x| and the
// smallest nonzero |x| less one, as bits (for ±0, magnitude − 1 wraps to 0xFFFFFFFF and never
// lowers the minimum).
struct ChunkSums {
  double sum[kChunk];
  std::uint32_t largest[kChunk];
  std::uint32_t smallest_less_one[kChunk];
};

// Up to this many slots are added in one pass over the chunk's sums, so that the sums and
// magnitudes are loaded and stored once for that many addends.
constexpr std::uint32_t kSlotsPerPass = 4;

// Adds kSlots slots (x, x + stride, …) into the chunk's sums. The first pass starts each sum
// at −0: −0 + x = x for every x (+0 included), so an all −0 sum stays −0 and any other zero
// sum is +0, as the law wants.
template <bool kFirst, std::uint32_t kSlots>
RV_LOOP_BODY void add_slots_body(const float* __restrict x, std::size_t stride, std::size_t count,
                                 ChunkSums& s) {
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t largest = 0;
    std::uint32_t smallest_less_one = 0xFFFFFFFFu;
    double sum = -0.0;
    if constexpr (!kFirst) {
      largest = s.largest[i];
      smallest_less_one = s.smallest_less_one[i];
      sum = s.sum[i];
    }
    for (std::uint32_t j = 0; j < kSlots; ++j) {
      const float value = x[j * stride + i];
      std::uint32_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
      largest = std::max(largest, magnitude);
      smallest_less_one = std::min(smallest_less_one, magnitude - 1u);
      sum += static_cast<double>(value);
    }
    s.largest[i] = largest;
    s.smallest_less_one[i] = smallest_less_one;
    s.sum[i] = sum;
  }
}

// How the exact sum becomes the result.
enum class Rounding {
  kSum,         // RNE of the sum
  kScaledMean,  // W = 2^k: RNE of the sum × 2^−k, exact in double
  kDividedMean  // otherwise: RNE of the correctly rounded double quotient
};

// The results of a chunk into `result`; `rare[i]` = 1 where the double cannot give the law's
// bits (returns whether any is). Branch-free, so that it vectorises.
// The double sum is exact when every addend is a multiple of 2^(e_min − 1 − 149) and every
// partial sum stays below 2^(e_min − 1 − 149 + 53): |partial| < W · 2^(e_max + 23 − 149), so
// e_max − e_min ≤ span = 53 − 24 − ⌈log2 W⌉ (e: the biased exponent, at least 1). A sum that
// is not finite came from a NaN or ±Inf addend, and IEEE addition already gives the law's
// special result (finite floats, at most 2^20 of them, cannot overflow a double).
// kDividedMean: y = sum / W is the true mean rounded once to 53 bits, and rounds to float as
// the true mean does (docs/DESIGN.md §2.4); results below 2^-125 round at 2^-149 rather than
// at 24 bits and are left to the law.
template <Rounding kRounding>
RV_LOOP_BODY bool round_chunk_body(const ChunkSums& s, std::size_t count, int span, double factor,
                                   float* __restrict result, unsigned char* __restrict rare) {
  unsigned char any = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const int e_max = std::max(static_cast<int>(s.largest[i] >> 23), 1);
    const int e_min = std::max(static_cast<int>((s.smallest_less_one[i] + 1u) >> 23), 1);
    const bool finite = s.largest[i] < 0x7F800000u;
    double y = s.sum[i];
    bool tiny = false;
    if constexpr (kRounding == Rounding::kScaledMean) y *= factor;
    if constexpr (kRounding == Rounding::kDividedMean) {
      y /= factor;
      tiny = (std::fabs(y) < 0x1p-125) & (y != 0.0);
    }
    const auto is_rare = static_cast<unsigned char>(finite & ((e_max - e_min > span) | tiny));
    result[i] = canonicalize_nan(static_cast<float>(y));
    rare[i] = is_rare;
    any |= is_rare;
  }
  return any != 0;
}

// The loops for each instruction set (host_vector_targets.h).
using AddSlots = void (*)(const float*, std::size_t, std::size_t, ChunkSums&);
using RoundChunk = bool (*)(const ChunkSums&, std::size_t, int, double, float*, unsigned char*);
struct StackedLoops {
  AddSlots first_slots[kSlotsPerPass];  // [k − 1]: the first pass over k slots
  AddSlots add_slots[kSlotsPerPass];    // [k − 1]: a later pass over k slots
  RoundChunk round_chunk[3];            // by Rounding
};

template <bool kFirst, std::uint32_t kSlots>
void add_slots_baseline(const float* x, std::size_t stride, std::size_t count, ChunkSums& s) {
  add_slots_body<kFirst, kSlots>(x, stride, count, s);
}
template <Rounding kRounding>
bool round_chunk_baseline(const ChunkSums& s, std::size_t count, int span, double factor,
                          float* result, unsigned char* rare) {
  return round_chunk_body<kRounding>(s, count, span, factor, result, rare);
}
constexpr StackedLoops kBaselineLoops{
    {add_slots_baseline<true, 1>, add_slots_baseline<true, 2>, add_slots_baseline<true, 3>,
     add_slots_baseline<true, 4>},
    {add_slots_baseline<false, 1>, add_slots_baseline<false, 2>, add_slots_baseline<false, 3>,
     add_slots_baseline<false, 4>},
    {round_chunk_baseline<Rounding::kSum>, round_chunk_baseline<Rounding::kScaledMean>,
     round_chunk_baseline<Rounding::kDividedMean>}};

#if defined(RV_HOST_EXACT_AVX2)
template <bool kFirst, std::uint32_t kSlots>
RV_TARGET_AVX2 void add_slots_avx2(const float* x, std::size_t stride, std::size_t count,
                                   ChunkSums& s) {
  add_slots_body<kFirst, kSlots>(x, stride, count, s);
}
template <Rounding kRounding>
RV_TARGET_AVX2 bool round_chunk_avx2(const ChunkSums& s, std::size_t count, int span, double factor,
                                     float* result, unsigned char* rare) {
  return round_chunk_body<kRounding>(s, count, span, factor, result, rare);
}
constexpr StackedLoops kAvx2Loops{
    {add_slots_avx2<true, 1>, add_slots_avx2<true, 2>, add_slots_avx2<true, 3>,
     add_slots_avx2<true, 4>},
    {add_slots_avx2<false, 1>, add_slots_avx2<false, 2>, add_slots_avx2<false, 3>,
     add_slots_avx2<false, 4>},
    {round_chunk_avx2<Rounding::kSum>, round_chunk_avx2<Rounding::kScaledMean>,
     round_chunk_avx2<Rounding::kDividedMean>}};
#endif

const StackedLoops& loops_for(detail::HostIsa isa) {
#if defined(RV_HOST_EXACT_AVX2)
  if (isa == detail::HostIsa::kAvx2) return kAvx2Loops;
#endif
  return kBaselineLoops;
}

}  // namespace

void exact_reduce_stacked_in_double(const float* stacked, std::uint32_t world,
                                    std::size_t slot_stride, std::size_t n, Op op, float* out) {
  static const detail::HostIsa isa = detail::host_isa_available(detail::HostIsa::kAvx2)
                                         ? detail::HostIsa::kAvx2
                                         : detail::HostIsa::kBaseline;
  detail::exact_reduce_stacked_in_double(stacked, world, slot_stride, n, op, out, isa);
}

namespace detail {

void exact_reduce_stacked_in_double(const float* stacked, std::uint32_t world,
                                    std::size_t slot_stride, std::size_t n, Op op, float* out,
                                    HostIsa isa) {
  if (!host_isa_available(isa)) {
    throw InputError("exact_reduce_stacked_in_double: this CPU or build has no AVX2 loops");
  }
  check_stacked_table("exact_reduce_stacked_in_double", world, slot_stride, n);
  if (n == 0) return;
  const StackedLoops& loops = loops_for(isa);
  if (!host_fp_state_is_ieee()) {
    exact_reduce_stacked(stacked, world, slot_stride, n, op, out);
    return;
  }
  const int k = exact::log2_ceiling(world);
  const bool power_of_two = (std::uint32_t{1} << k) == world;
  const Rounding rounding = op == Op::kSum ? Rounding::kSum
                            : power_of_two ? Rounding::kScaledMean
                                           : Rounding::kDividedMean;
  const double factor =
      rounding == Rounding::kScaledMean ? std::ldexp(1.0, -k) : static_cast<double>(world);
  const int span = 53 - 24 - k;
  const RoundChunk round_chunk = loops.round_chunk[static_cast<int>(rounding)];

  ChunkSums sums;
  float result[kChunk];
  unsigned char rare[kChunk];
  for (std::size_t begin = 0; begin < n; begin += kChunk) {
    const std::size_t count = std::min(kChunk, n - begin);
    for (std::uint32_t r = 0; r < world; r += kSlotsPerPass) {
      const std::uint32_t slots = std::min(kSlotsPerPass, world - r);
      const AddSlots add = r == 0 ? loops.first_slots[slots - 1] : loops.add_slots[slots - 1];
      add(stacked + r * slot_stride + begin, slot_stride, count, sums);
    }
    if (round_chunk(sums, count, span, factor, result, rare)) {
      // Re-read through the law; nothing of this chunk is written yet, so where out is
      // slot 0 the addends are still there.
      for (std::size_t i = 0; i < count; ++i) {
        if (rare[i] != 0)
          exact_reduce_stacked(stacked + begin + i, world, slot_stride, 1, op, result + i);
      }
    }
    std::memcpy(out + begin, result, count * sizeof(float));
  }
}

}  // namespace detail
}  // namespace rv
