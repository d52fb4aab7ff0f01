#include "verify/live/library_sum_check.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/arena.h"
#include "core/dtype_arrays.h"
#include "core/dtype_law.h"
#include "core/fold.h"
#include "core/fold_law.h"

namespace rv {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;  // binary32's

// γ_k = k·u / (1 − k·u), for the unit roundoff u of the format the additions round to.
double gamma_of(std::uint32_t k, double u = kUnitRoundoff) {
  const double ku = static_cast<double>(k) * u;
  return ku / (1.0 - ku);
}

// What the bound needs of the case's dtype (docs/DESIGN.md §2.5): its unit roundoff, half its
// smallest subnormal (the absolute error of one rounding into the subnormal range) and its
// largest finite value.
struct DTypeRounding {
  double unit_roundoff, half_subnormal, max_finite;
};
DTypeRounding rounding_of(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return {0x1p-8, 0x1p-134, static_cast<double>(widen_bf16(0x7F7Fu))};
    case DType::kF16:
      return {0x1p-11, 0x1p-25, 65504.0};
    case DType::kF32:
      break;
  }
  return {kUnitRoundoff, 0x1p-150, static_cast<double>(FLT_MAX)};
}

}  // namespace

LibrarySumCheck check_library_sum(const CaseId& data_case, const std::vector<float>& result) {
  CaseId id = data_case;
  id.contract = Contract::kFixedOrder;
  validate_case_id(id);
  const std::uint32_t world = id.world;
  const bool half = id.dtype != DType::kF32;
  const DTypeRounding rounding = rounding_of(id.dtype);
  // The library's additions round to the dtype (a half-precision sum per hop); fixed-order's
  // to binary32, then once more to the dtype.
  const double gamma = gamma_of(world - 1);
  const double gamma_library = gamma_of(world - 1, rounding.unit_roundoff);
  const double scale = static_cast<double>(1.0f / static_cast<float>(world));
  // Blocks of 16 Ki elements per rank, as stream_reference_reduction.
  const std::size_t block = std::min<std::size_t>(std::size_t{1} << 14, id.count);
  std::vector<float> slots(block * world);
  std::vector<float> fixed_order(block);
  ErrorMeter meter(id.dtype);
  LibrarySumCheck check;
  for (std::uint64_t begin = 0; begin < id.count; begin += block) {
    const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(block, id.count - begin));
    for (std::uint32_t r = 0; r < world; ++r) {
      generate_arena_slice(id.arena(), r, begin, count, slots.data() + r * block);
    }
    fold_stacked(slots.data(), world, block, count, id.op, fixed_order.data());
    round_to_dtype_in_place(fixed_order.data(), count, id.dtype);
    for (std::size_t i = 0; i < count; ++i) {
      const float mine = result[begin + i];
      const float theirs = fixed_order[i];
      meter.add(mine, theirs);
      if (check.beyond_association || float_bits(mine) == float_bits(theirs)) continue;
      double magnitude = 0;  // Σ|x_r| over the finite addends
      bool special = false;
      for (std::uint32_t r = 0; r < world; ++r) {
        const float x = slots[r * block + i];
        if (std::isfinite(x)) {
          magnitude += std::fabs(static_cast<double>(x));
        } else {
          special = true;
        }
      }
      // Some association might overflow to ±Inf (and then meet an infinity of the other
      // sign): any result is possible.
      if (magnitude * (1.0 + 2.0 * gamma_of(world, rounding.unit_roundoff)) >=
          rounding.max_finite) {
        continue;
      }
      double bound = 0;  // special addends: every association gives the same NaN or infinity
      if (!special) {
        // Each sum within γ·Σ|x| of the exact one; fixed-order's binary32 sum of a half case
        // is then rounded to the dtype (u_h of at most (1 + γ)·Σ|x|). Sums of values of a
        // format that land in its subnormal range are exact, so no absolute term.
        const double library_error = gamma_library * magnitude;
        double fixed_order_error = gamma * magnitude;
        if (half) fixed_order_error += rounding.unit_roundoff * (1.0 + gamma) * magnitude;
        bound = library_error + fixed_order_error;
        if (id.op == Op::kMean) {
          // Both sums are scaled by r = 1.0f / W in binary32 and rounded once more (a
          // subnormal product by up to half of 2^-149 each); a half case's means are then
          // rounded to the dtype (relative u_h, or half its smallest subnormal, each).
          const double largest = (1.0 + gamma_library + gamma) * magnitude * scale * (1.0 + kUnitRoundoff);
          bound = scale * bound + 2.0 * kUnitRoundoff * largest + 0x1p-149;
          if (half) bound += 2.0 * (rounding.unit_roundoff * (largest + 0x1p-150) + rounding.half_subnormal);
        }
        // Slack for the double arithmetic of Σ|x_r| and of the bound itself.
        bound *= 1.0 + 0x1p-30;
        const double distance = std::fabs(static_cast<double>(mine) - static_cast<double>(theirs));
        if (std::isfinite(mine) && std::isfinite(theirs) && distance <= bound) continue;
      }
      check.beyond_association =
          FirstDifference{1, begin + i, float_bits(mine), float_bits(theirs), bound};
    }
  }
  check.vs_fixed_order = meter.finish();
  return check;
}

}  // namespace rv
