#include "core/exact/exact_plan.h"

#include <algorithm>

#include "core/error.h"
#include "core/exact/exact_law.h"

namespace rv {

std::size_t exact_block_count(std::size_t n) { return (n + exact::kBlock - 1) / exact::kBlock; }

std::size_t ExactPlan::block_count(std::size_t b) const {
  return std::min<std::size_t>(exact::kBlock, count - b * exact::kBlock);
}

ExactPlan plan_exact_blocks(const std::int64_t* agreed, std::size_t n, std::uint32_t world) {
  RV_ENFORCE_GE(InputError, world, 1u, "exact contract: world size");
  RV_ENFORCE_LE(InputError, world, exact::kMaxWorld, "exact contract: the largest world is 2^20");
  ExactPlan plan;
  plan.world = world;
  plan.limb_bits = exact::limb_bits(world);
  plan.count = n;
  const std::size_t blocks = exact_block_count(n);
  plan.blocks.resize(blocks);
  std::int64_t offset = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::int64_t* w = agreed + b * exact::kAgreementWords;
    // Words that no rank could have sent mean the transport corrupted the agreement round.
    if (w[0] < -1 || w[0] > exact::kTopPosition || w[1] < -1 || w[1] > exact::kTopPosition ||
        (w[0] < 0) != (w[1] < 0) || w[2] < 0 || w[2] > 1 ||
        (w[0] >= 0 && w[0] < exact::kTopPosition - w[1])) {
      throw RuntimeFailure(detail::concat(
          "exact contract: the agreed window of block ", b, " is impossible (top ", w[0],
          ", bottom complement ", w[1], ", special ", w[2],
          "): the transport delivered corrupt agreement words"));
    }
    const exact::Window window = exact::window_of(exact::AgreementWords{w[0], w[1], w[2]}, world);
    ExactBlockSlot& slot = plan.blocks[b];
    slot.offset = offset;
    slot.bottom = window.bottom;
    slot.limbs = static_cast<std::int16_t>(window.limbs);
    slot.special = window.special ? 1 : 0;
    offset += static_cast<std::int64_t>(plan.block_count(b)) * (slot.limbs + slot.special);
  }
  plan.words = static_cast<std::size_t>(offset);
  return plan;
}

}  // namespace rv
