// The oracle's straight references (docs/DESIGN.md §2): each contract's reduced arena computed
// the plainest way, over whole arenas, sharing no dataflow with the reducers under test.
// EmulatedWorld (core/oracle/emulated_world.h) and every live reducer must equal them bit for
// bit, and every expectation the tool states for raw inputs comes from here.
#pragma once

#include <vector>

#include "core/contract.h"

namespace rv {

// Fixed-order: one ascending fold over whole arenas, no sharding.
std::vector<float> reference_fold(const std::vector<std::vector<float>>& arenas, Op op);

// Exact: per element, the W addends' integers k added at their own bit positions into one
// wide accumulator (no windows, no limbs), the specials counted, rounded.
std::vector<float> reference_exact(const std::vector<std::vector<float>>& arenas, Op op);

// The one expectation for raw per-rank inputs (`run --inputs`, `digest --inputs`): the
// straight reference of `contract` (fixed-order or exact). Throws InputError for library-sum
// (it has no portable result), for no arenas and for arenas of different lengths.
std::vector<float> expected_reduction(const std::vector<std::vector<float>>& arenas,
                                      Contract contract, Op op);

}  // namespace rv
