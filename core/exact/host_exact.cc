// The fast host paths. Each loop is branch-free so that GCC vectorises it at plain -O3 (SSE2:
// -fopt-info-vec reports every loop below), and each gives exactly the bits of the element
// laws (exact_law.h, applied one element at a time in host_exact_law.cc): the argument is
// written above each loop, and tests/exact/host_exact_fast_test.cc holds the two to the bit.
// Where an argument does not reach (a window wider than 51 bits, several limbs, special
// words, a process whose floating-point state is not IEEE's default), the block is done by
// the law.
//
// Every loop body is compiled twice: for the build's baseline (SSE2 on x86-64) and, on x86,
// for AVX2 (8 int32 or 4 double lanes, and the int32 min/max SSE2 lacks), chosen at run time
// by what the CPU offers. No intrinsics: the same C++ body, inlined into a function with
// another target attribute. Both compute only exact operations and the one IEEE rounding
// argued below, so both give the law's bits; the tests run each.
#include "core/exact/host_exact.h"

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/host_exact_law.h"
#include "core/exact/host_vector_targets.h"
#include "core/fold_law.h"

namespace rv {
namespace {


// 2^e, exactly, for −1022 ≤ e ≤ 1023 (a normal double).
double power_of_two(int e) { return double_from_bits(static_cast<std::uint64_t>(e + 1023) << 52); }

// An integer-valued double d with |d| < 2^51 plus 1.5 × 2^52 is exact and lies in [2^52, 2^53),
// where consecutive doubles are consecutive integers: the sum's bit pattern is that of
// 1.5 × 2^52 plus d, in any rounding mode. So int64 ↔ double for |value| < 2^51 is one integer
// addition and one exact floating-point addition, both of which SSE2 has for two lanes
// (the int64 ↔ double conversions themselves have no SSE2 form).
constexpr double kMagic = 0x1.8p52;
constexpr std::uint64_t kMagicBits = 0x4338000000000000u;
static_assert(kMagicBits == (std::uint64_t{1023 + 52} << 52 | std::uint64_t{1} << 51),
              "kMagicBits is the bit pattern of 1.5 × 2^52");

// Nonzero when the int64 r lies outside [−2^51, 2^51).
std::uint64_t outside_51_bits(std::uint64_t r) { return (r + (std::uint64_t{1} << 51)) >> 52; }

// Above every bit position (0 … 276): where the lowest position's minimum starts.
constexpr std::int32_t kNoPosition = 1024;

// The agreement words of one block, exact::widen_agreement over its values, branch-free:
// - special: a NaN, ±Inf (exponent field all ones) or −0 sets the flag.
// - top: exact::top_position is monotone in m = bits & 0x7FFFFFFF over finite nonzero values
//   (a subnormal's top position, 31 − clz(fraction) ≤ 22, grows with its fraction; a normal
//   value's, exponent + 22 ≥ 23, with its exponent), so the block's top position is the top
//   position of its largest finite m. Zeros count as m = 0, below every nonzero value.
// - bottom: exact::bottom_position is shift + ctz(significand). 2^ctz is significand &
//   −significand, a power of two of at most 2^23, which int → float converts exactly in any
//   rounding mode; its biased exponent field is 127 + ctz.
// A block with no finite nonzero value keeps m = 0: top and bottom complement −1, as the law.
RV_LOOP_BODY exact::AgreementWords agreement_of_block_body(const float* x, std::size_t count) {
  std::int32_t largest = 0;
  std::int32_t lowest = kNoPosition;
  std::uint32_t special = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t bits = float_bits(x[i]);
    const auto magnitude = static_cast<std::int32_t>(bits & 0x7FFFFFFFu);
    special |= static_cast<std::uint32_t>(magnitude >= 0x7F800000) |
               static_cast<std::uint32_t>(bits == 0x80000000u);
    const std::int32_t exponent = magnitude >> 23;
    const auto normal = static_cast<std::int32_t>(exponent != 0);
    const std::int32_t significand = (magnitude & 0x7FFFFF) | (normal << 23);
    const std::int32_t lowest_bit = significand & -significand;
    const auto trailing_zeros =
        static_cast<std::int32_t>(float_bits(static_cast<float>(lowest_bit)) >> 23) - 127;
    const std::int32_t bottom = exponent - normal + trailing_zeros;
    // Masks, not conditionals: GCC would sink the conversion above into a branch (it may
    // raise a floating-point flag) and then not vectorise.
    const std::int32_t finite = -static_cast<std::int32_t>(magnitude < 0x7F800000);
    const std::int32_t counted = finite & -static_cast<std::int32_t>(magnitude != 0);
    largest = std::max(largest, magnitude & finite);
    lowest = std::min(lowest, (bottom & counted) | (kNoPosition & ~counted));
  }
  exact::AgreementWords words;
  words.special = special != 0 ? 1 : 0;
  if (largest != 0) {
    words.top = exact::top_position(exact::magnitude_of(static_cast<std::uint32_t>(largest)));
    words.bottom_complement = exact::kTopPosition - lowest;
  }
  return words;
}

// The digits of a one-limb block (exact::digits_of(…).low): d = (double)x × 2^(149 − bottom),
// read back as an int64. x = ±s × 2^(shift − 149), s < 2^24, so d = ±s × 2^(shift − bottom):
// an integer (the agreed window has no set bit of any |k| below bottom) of at most L ≤ 62
// bits (a one-limb window is at most L bits wide), which the law's digit is too: (s >> tz) <<
// (shift + tz − bottom) in limb 0, the mask dropping nothing, with x's sign. The float →
// double conversion and the scaling by a power of two are exact (24 significant bits, far
// inside double's exponent range), provided subnormal inputs are read as they are (DAZ off:
// the caller checks). Non-finite values (special blocks only; the law's digit is 0) are
// replaced by 0 first, and ±0 gives 0. A digit of 51 bits or more cannot be read back exactly:
// then the block is reported (false) for the law to redo.
RV_LOOP_BODY bool encode_one_limb_body(const float* x, std::size_t count, int bottom,
                                       std::int64_t* out) {
  const double scale = power_of_two(149 - bottom);
  std::uint64_t outside = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t bits = float_bits(x[i]);
    const std::uint32_t finite =
        0u - static_cast<std::uint32_t>((bits & 0x7F800000u) != 0x7F800000u);
    const double d = static_cast<double>(float_from_bits(bits & finite)) * scale;
    // |d| < 2^51: the difference is d. Otherwise d + 1.5 × 2^52 leaves [2^52, 2^53) (it is
    // at least 2^53, or an exact integer below 2^52), so the difference leaves [−2^51, 2^51).
    const std::uint64_t r = double_bits(d + kMagic) - kMagicBits;
    outside |= outside_51_bits(r);
    out[i] = static_cast<std::int64_t>(r);
  }
  return outside == 0;
}

// The results of a one-limb block without specials (exact::round_one_limb) from the digit
// sums D, |D| < 2^63, read as doubles exactly when |D| < 2^51 (otherwise the block is reported,
// false, for the law to redo). The law rounds the exact value |D| × 2^(bottom − 149) (for a
// mean, divided by W) once to binary32: nearest-even, subnormals kept, ±Inf from 2^128 − 2^103
// up, +0 for D = 0.
//
// Scaled (the sum, and the mean of W = 2^k ranks: factor 2^(bottom − 149 − k)): D × factor is
// exact in double (51 bits scaled by 2^(−169 … 127)) and the double → float conversion rounds
// it once, in exactly that way (IEEE's binary32 rounding, with its subnormals and overflow;
// 0 gives +0). So y is the law's result.
RV_LOOP_BODY bool round_one_limb_scaled_body(const std::int64_t* in, std::size_t count,
                                             double factor, float* y) {
  std::uint64_t outside = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const auto d = static_cast<std::uint64_t>(in[i]);
    outside |= outside_51_bits(d);
    y[i] = static_cast<float>((double_from_bits(d + kMagicBits) - kMagic) * factor);
  }
  return outside == 0;
}

// Divided (the mean of any other W): y = (float)(D / divisor), divisor = W × 2^(149 − bottom)
// (exact: W < 2^21). The division gives p = Q rounded to 53 bits, Q = |D| v / W the true mean
// (v = 2^(bottom − 149); signs are symmetric), and p then rounds to binary32: twice. It is
// still the law's single rounding of Q, because no binary32 decision point lies between p and
// Q. Binary32 rounding of a positive real depends only on its place among G: the binary32
// values and the midpoints between neighbours (2^128 − 2^103, the overflow threshold,
// included). Let E = ⌊log2 Q⌋ (Q ≥ 2^−169: a normal double). Within [2^E, 2^(E+1)], G lies on
// the grid gℤ, g = 2^(max(E, −126) − 24) (25-bit midpoints; 2^−150 below 2^−126). For such a
// point m ≠ Q, Q − m = (|D| v − m W) / W, whose numerator is a nonzero multiple of min(v, g):
// |Q − m| ≥ min(v, g) / W. And |p − Q| ≤ 2^(E − 53).
// - If v ≤ g: 2^E ≤ Q < 2^51 v / W, so |p − Q| < v / (4W).
// - If g < v: g ≥ 2^(E − 24), so |p − Q| ≤ g 2^−29 < g / W (W ≤ 2^20).
// So p is on Q's side of every point of G; and where Q is itself in G it has at most 25
// significant bits, so p = Q. Q ≥ 2^128 gives p ≥ 2^128: both round to Inf.
RV_LOOP_BODY bool round_one_limb_divided_body(const std::int64_t* in, std::size_t count,
                                              double divisor, float* y) {
  std::uint64_t outside = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const auto d = static_cast<std::uint64_t>(in[i]);
    outside |= outside_51_bits(d);
    y[i] = static_cast<float>((double_from_bits(d + kMagicBits) - kMagic) / divisor);
  }
  return outside == 0;
}

// The loops of one instruction set.
struct HostLoops {
  exact::AgreementWords (*agreement_of_block)(const float* x, std::size_t count);
  bool (*encode_one_limb)(const float* x, std::size_t count, int bottom, std::int64_t* out);
  bool (*round_one_limb_scaled)(const std::int64_t* in, std::size_t count, double factor, float* y);
  bool (*round_one_limb_divided)(const std::int64_t* in, std::size_t count, double divisor,
                                 float* y);
};

exact::AgreementWords agreement_of_block_baseline(const float* x, std::size_t count) {
  return agreement_of_block_body(x, count);
}
bool encode_one_limb_baseline(const float* x, std::size_t count, int bottom, std::int64_t* out) {
  return encode_one_limb_body(x, count, bottom, out);
}
bool round_one_limb_scaled_baseline(const std::int64_t* in, std::size_t count, double factor,
                                    float* y) {
  return round_one_limb_scaled_body(in, count, factor, y);
}
bool round_one_limb_divided_baseline(const std::int64_t* in, std::size_t count, double divisor,
                                     float* y) {
  return round_one_limb_divided_body(in, count, divisor, y);
}
constexpr HostLoops kBaselineLoops{agreement_of_block_baseline, encode_one_limb_baseline,
                                   round_one_limb_scaled_baseline, round_one_limb_divided_baseline};

#if defined(RV_HOST_EXACT_AVX2)
RV_TARGET_AVX2 exact::AgreementWords agreement_of_block_avx2(const float* x, std::size_t count) {
  return agreement_of_block_body(x, count);
}
RV_TARGET_AVX2 bool encode_one_limb_avx2(const float* x, std::size_t count, int bottom,
                                         std::int64_t* out) {
  return encode_one_limb_body(x, count, bottom, out);
}
RV_TARGET_AVX2 bool round_one_limb_scaled_avx2(const std::int64_t* in, std::size_t count,
                                               double factor, float* y) {
  return round_one_limb_scaled_body(in, count, factor, y);
}
RV_TARGET_AVX2 bool round_one_limb_divided_avx2(const std::int64_t* in, std::size_t count,
                                                double divisor, float* y) {
  return round_one_limb_divided_body(in, count, divisor, y);
}
constexpr HostLoops kAvx2Loops{agreement_of_block_avx2, encode_one_limb_avx2,
                               round_one_limb_scaled_avx2, round_one_limb_divided_avx2};
#endif

const HostLoops& loops_for(detail::HostIsa isa) {
#if defined(RV_HOST_EXACT_AVX2)
  if (isa == detail::HostIsa::kAvx2) return kAvx2Loops;
#endif
  return kBaselineLoops;
}

detail::HostIsa fastest_isa() {
  static const detail::HostIsa isa = detail::host_isa_available(detail::HostIsa::kAvx2)
                                         ? detail::HostIsa::kAvx2
                                         : detail::HostIsa::kBaseline;
  return isa;
}

int log2_if_power_of_two(std::uint32_t world) {
  if (world == 0 || (world & (world - 1)) != 0) return -1;
  return exact::count_trailing_zeros32(world);
}

}  // namespace

namespace detail {

// Probed with the operations the fast paths use, on this thread, every call: a trainer may
// have loaded a library built with fast-math (FTZ/DAZ) or changed the rounding mode.
bool host_fp_state_is_ieee() {
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
  return false;  // excess precision (x87) would round twice
#else
  volatile double tie = 1.0 + 0x1p-24;              // halfway between 1 and 1 + 2^-23
  volatile double above = 1.0 + 0x1p-24 + 0x1p-40;  // just above it
  volatile double tiny_double = 0x1p-149;           // a binary32 subnormal
  volatile float tiny_float = 0x1p-149f;
  // Nearest-even: the tie goes to 1 (not up: upward, ties-away), above it up (not toward zero
  // or downward, which give 1).
  const bool nearest_even =
      static_cast<float>(tie) == 1.0f && static_cast<float>(above) == 1.0f + 0x1p-23f;
  const bool keeps_subnormal_results = float_bits(static_cast<float>(tiny_double)) == 1u;  // FTZ
  const bool reads_subnormal_inputs = static_cast<double>(tiny_float) == 0x1p-149;         // DAZ
  return nearest_even && keeps_subnormal_results && reads_subnormal_inputs;
#endif
}

bool host_isa_available(HostIsa isa) {
  if (isa == HostIsa::kBaseline) return true;
#if defined(RV_HOST_EXACT_AVX2)
  // Also checks that the OS saves the YMM registers (XCR0), as GCC's and Clang's runtimes do.
  return __builtin_cpu_supports("avx2") != 0;
#else
  return false;
#endif
}

void require_available(HostIsa isa, const char* function) {
  if (!host_isa_available(isa)) {
    throw InputError(std::string(function) + ": this CPU or build has no AVX2 loops");
  }
}

void exact_agreement_words(const float* values, std::size_t n, std::int64_t* words, HostIsa isa) {
  require_available(isa, "exact_agreement_words");
  const HostLoops& loops = loops_for(isa);
  const std::size_t blocks = exact_block_count(n);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t begin = b * exact::kBlock;
    const exact::AgreementWords agreed =
        loops.agreement_of_block(values + begin, std::min<std::size_t>(exact::kBlock, n - begin));
    std::int64_t* w = words + b * exact::kAgreementWords;
    w[0] = agreed.top;
    w[1] = agreed.bottom_complement;
    w[2] = agreed.special;
  }
}

void exact_encode(const float* values, const ExactPlan& plan, std::int64_t* words, HostIsa isa) {
  require_available(isa, "exact_encode");
  if (!host_fp_state_is_ieee()) {
    exact_encode_by_law(values, plan, words);
    return;
  }
  const HostLoops& loops = loops_for(isa);
  for (std::size_t b = 0; b < plan.blocks.size(); ++b) {
    const ExactBlockSlot& slot = plan.blocks[b];
    const std::size_t count = plan.block_count(b);
    const float* x = values + b * exact::kBlock;
    std::int64_t* out = words + slot.offset;
    if (slot.limbs == 1 && loops.encode_one_limb(x, count, slot.bottom, out)) {
      if (slot.special) encode_special_words_by_law(x, count, slot, out);
    } else {
      encode_block_by_law(x, count, slot, plan.limb_bits, out);
    }
  }
}

void exact_round(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out, HostIsa isa) {
  require_available(isa, "exact_round");
  const bool mean = op == Op::kMean;
  if (!host_fp_state_is_ieee()) {
    exact_round_by_law(sums, plan, op, out);
    return;
  }
  const HostLoops& loops = loops_for(isa);
  const int log2_world = log2_if_power_of_two(plan.world);
  const bool divided = mean && log2_world < 0;
  const int shift = mean ? log2_world : 0;  // the mean of 2^k ranks: k positions lower
  for (std::size_t b = 0; b < plan.blocks.size(); ++b) {
    const ExactBlockSlot& slot = plan.blocks[b];
    const std::size_t count = plan.block_count(b);
    const std::int64_t* in = sums + slot.offset;
    float* y = out + b * exact::kBlock;
    if (slot.special == 0 && slot.limbs == 0) {  // no nonzero finite addend: an exact +0
      std::fill(y, y + count, 0.0f);
      continue;
    }
    if (slot.special == 0 && slot.limbs == 1) {
      const bool done = divided ? loops.round_one_limb_divided(
                                      in, count, plan.world * power_of_two(149 - slot.bottom), y)
                                : loops.round_one_limb_scaled(
                                      in, count, power_of_two(slot.bottom - 149 - shift), y);
      if (done) continue;
    }
    round_block_by_law(in, count, slot, plan.limb_bits, plan.world, mean, y);
  }
}

}  // namespace detail

void exact_agreement_words(const float* values, std::size_t n, std::int64_t* words) {
  detail::exact_agreement_words(values, n, words, fastest_isa());
}

void merge_agreement_words(std::int64_t* into, const std::int64_t* other, std::size_t words) {
  for (std::size_t i = 0; i < words; ++i) into[i] = std::max(into[i], other[i]);
}

void exact_encode(const float* values, const ExactPlan& plan, std::int64_t* words) {
  detail::exact_encode(values, plan, words, fastest_isa());
}

void exact_round(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out,
                 DType dtype) {
  if (dtype != DType::kF32) {
    detail::exact_round_by_law(sums, plan, op, out, dtype);
    return;
  }
  detail::exact_round(sums, plan, op, out, fastest_isa());
}

}  // namespace rv
