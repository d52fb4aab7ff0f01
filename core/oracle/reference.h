// The oracle's straight references (docs/DESIGN.md §2): each contract's reduced arena computed
// the plainest way, over whole arenas, sharing no dataflow with the reducers under test.
// EmulatedWorld (core/oracle/emulated_world.h) and every live reducer must equal them bit for
// bit, and every expectation the tool states for raw inputs comes from here.
#pragma once

#include <vector>

#include "core/contract.h"
#include "core/dtype.h"

namespace rv {

// Fixed-order: one ascending fold over whole arenas, no sharding.
// bf16/f16 (docs/DESIGN.md §2.5): the addends are the dtype's values widened, the fold is
// binary32's, and the result is rounded to the dtype once at the end.
std::vector<float> reference_fixed_order(const std::vector<std::vector<float>>& arenas, Op op,
                                         DType dtype = DType::kF32);

// Exact: per element, the W addends' integers k added at their own bit positions into one
// wide accumulator (no windows, no limbs), the specials counted, rounded once to `dtype`.
std::vector<float> reference_exact(const std::vector<std::vector<float>>& arenas, Op op,
                                   DType dtype = DType::kF32);

// The one expectation for raw per-rank inputs (`run --inputs`, `digest --inputs`): the
// straight reference of `contract` (fixed-order or exact). Throws InputError for library-sum
// (it has no portable result), for no arenas and for arenas of different lengths.
// Results of bf16/f16 are their values widened to binary32.
std::vector<float> expected_reduction(const std::vector<std::vector<float>>& arenas,
                                      Contract contract, Op op, DType dtype = DType::kF32);

}  // namespace rv
