// The library-sum contract's finishing step on a GPU, applied by us to the library's own sum
// (docs/DESIGN.md §2): the mean scale when op is mean, then every NaN written as 0x7FC00000, in
// place. The same element law as core/fold.h's finish_library_sum. No CUDA types here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"

namespace rv {

// Enqueues the step on `cuda_stream` (a cudaStream_t of the current device; nullptr for the
// default stream) over n floats at d_values (any alignment). Throws RuntimeFailure when the
// launch fails.
void launch_finish_library_sum(float* d_values, std::size_t n, std::uint32_t world, Op op,
                               void* cuda_stream);

}  // namespace rv
