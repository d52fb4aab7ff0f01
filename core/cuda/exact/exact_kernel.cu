// What every exact kernel's launch shares: the plan view the kernels read (view_of) and the
// argument checks made before any launch. The kernels themselves are in
// exact_{agreement,encode,round,combine}_kernel.cu; the element laws are exact_law.h's,
// inlined into the device code, so only the mapping of elements to threads is written there.
#include "core/cuda/exact/exact_kernel.h"

#include <algorithm>
#include <string>

#include "core/cuda/exact/exact_kernel_detail.h"
#include "core/error.h"
#include "core/exact/exact_law.h"

namespace rv {
namespace exact_kernel_detail {

void check_plan(const ExactPlanView& plan, const char* who) {
  const std::string name(who);
  RV_ENFORCE_EQ(InputError, plan.block_count, exact_block_count(plan.count),
                name + ": the plan's blocks do not cover its elements");
  RV_ENFORCE_GE(InputError, plan.world, 1u, name + ": world size");
  RV_ENFORCE_LE(InputError, plan.world, exact::kMaxWorld, name + ": the largest world is 2^20");
  RV_ENFORCE_EQ(InputError, plan.limb_bits, exact::limb_bits(plan.world),
                name + ": the plan's limb width is not its world's");
  if (plan.block_count != 0 && plan.blocks == nullptr) {
    throw InputError(name + ": the plan's " + std::to_string(plan.block_count) +
                     " block slots are not on the device (null pointer)");
  }
}

void check_pointer(const void* p, const char* who, const char* what) {
  if (p == nullptr) throw InputError(std::string(who) + ": null device pointer for " + what);
}

}  // namespace exact_kernel_detail

namespace {

using exact_kernel_detail::one_limb_slot;

}  // namespace

ExactPlanView view_of(const ExactPlan& plan, const ExactBlockSlot* d_blocks) {
  ExactPlanView view;
  view.blocks = d_blocks;
  view.block_count = plan.blocks.size();
  view.count = plan.count;
  view.world = plan.world;
  view.limb_bits = plan.limb_bits;
  view.words = plan.words;
  view.general_blocks =
      std::any_of(plan.blocks.begin(), plan.blocks.end(),
                  [](const ExactBlockSlot& slot) { return !one_limb_slot(slot); });
  return view;
}

}  // namespace rv
