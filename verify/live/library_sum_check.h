// How rank 0 judges a library-sum result that differs from the fixed-order golden where no
// bit-exact match is promised (W > 2, data that rounds; docs/DESIGN.md §2.3). Every
// association of the W addends lies within γ_{W−1}·Σ|x_i| of the exact sum (γ_k = k·u /
// (1 − k·u), u = 2^−24: Higham, Accuracy and Stability of Numerical Algorithms, §4.2), so two
// of them lie within twice that of each other. A library's sum further from the fixed-order
// fold than that is no reassociation: the library returned a wrong sum (a lost, doubled or
// corrupted contribution), and the verdict is FAILED, not DIFFERS. For bf16/f16 cases the
// library's additions round to the dtype (u = 2^-8, 2^-11) and fixed-order's binary32 sum is
// rounded once more to it; the bound adds the two (docs/DESIGN.md §2.5), and distances are
// counted in the dtype's ulps.
#pragma once

#include <optional>
#include <vector>

#include "core/case_id.h"
#include "verify/golden/accuracy.h"
#include "verify/live/run_results.h"

namespace rv {

struct LibrarySumCheck {
  ErrorVsExact vs_fixed_order;  // differing elements, max and mean ulp (as error_against)
  // The first element further from fixed-order's than any association allows: `bits` the
  // library's, `golden_bits` fixed-order's, `bound` the largest distance allowed.
  std::optional<FirstDifference> beyond_association;
};

// `result` is the finished library-sum arena of the fixed-order data case `data_case` (its
// contract field is ignored). Elements where some association could overflow to ±Inf are
// exempt; where an addend is NaN or ±Inf (and nothing can overflow) every association gives
// the same bits, so the result must equal fixed-order's.
LibrarySumCheck check_library_sum(const CaseId& data_case, const std::vector<float>& result);

}  // namespace rv
