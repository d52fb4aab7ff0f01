#include "verify/live/library_sum_check.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/arena.h"
#include "core/fold.h"
#include "core/fold_law.h"

namespace rv {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;

// γ_k = k·u / (1 − k·u).
double gamma_of(std::uint32_t k) {
  const double ku = static_cast<double>(k) * kUnitRoundoff;
  return ku / (1.0 - ku);
}

}  // namespace

LibrarySumCheck check_library_sum(const CaseId& data_case, const std::vector<float>& result) {
  CaseId id = data_case;
  id.contract = Contract::kFixedOrder;
  validate_case_id(id);
  const std::uint32_t world = id.world;
  const double gamma = gamma_of(world - 1);
  const double scale = static_cast<double>(1.0f / static_cast<float>(world));
  // Blocks of 16 Ki elements per rank, as stream_reference_reduction.
  const std::size_t block = std::min<std::size_t>(std::size_t{1} << 14, id.count);
  std::vector<float> slots(block * world);
  std::vector<float> fixed_order(block);
  ErrorMeter meter;
  LibrarySumCheck check;
  for (std::uint64_t begin = 0; begin < id.count; begin += block) {
    const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(block, id.count - begin));
    for (std::uint32_t r = 0; r < world; ++r) {
      generate_arena_slice(id.arena(), r, begin, count, slots.data() + r * block);
    }
    fold_stacked(slots.data(), world, block, count, id.op, fixed_order.data());
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
      if (magnitude * (1.0 + 2.0 * gamma_of(world)) >= static_cast<double>(FLT_MAX)) continue;
      double bound = 0;  // special addends: every association gives the same NaN or infinity
      if (!special) {
        bound = 2.0 * gamma * magnitude;
        if (id.op == Op::kMean) {
          // Both sums are scaled by r = 1.0f / W and rounded once more (a subnormal product
          // by up to half of 2^-149 each).
          bound = scale * (bound + 2.0 * kUnitRoundoff * (1.0 + gamma) * magnitude) + 0x1p-149;
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
