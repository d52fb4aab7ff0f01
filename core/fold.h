// The fixed-order fold (docs/DESIGN.md §2) on the CPU: per element,
//   sum = ((x_0 + x_1) + x_2) + … + x_{W-1}
// in binary32, round-to-nearest-even, subnormals kept, starting from x_0 itself, then the
// mean scale and the NaN rule. Every CPU path (the reference, EmulatedWorld, the live
// reducers) calls these functions, so there is one fold in the code base.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"

namespace rv {

// addends[r] points at the n values of logical rank r, for r in [0, world).
// out may alias any of the addends (exactly, not partly overlap).
void fold_ascending(const float* const* addends, std::uint32_t world, std::size_t n, Op op,
                    float* out);

// The stacked layout of the live reducers: slot r (the copy that came from rank r) starts at
// stacked + r * slot_stride. Same bits as fold_ascending over the slots.
void fold_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride, std::size_t n,
                  Op op, float* out);

// The library-sum contract's finishing step, applied by us to the library's sum: the mean
// scale (when op is mean) and the NaN rule, in place.
void finish_library_sum(float* values, std::size_t n, std::uint32_t world, Op op);

}  // namespace rv
