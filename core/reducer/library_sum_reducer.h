// The library-sum contract (docs/DESIGN.md §2): the transport library's own sum all-reduce
// (Gloo's ring allreduce, ncclAllReduce), then the mean scale and the NaN rule applied by
// us. No portability promise: its bits follow the library's association order.
#pragma once

#include <cstddef>

#include "core/contract.h"
#include "core/reducer/fold_device.h"
#include "core/transport/transport.h"

namespace rv {

// In place over the n floats of `arena` (in the device's memory); collective.
void library_sum_all_reduce(Transport& transport, FoldDevice& device, float* arena, std::size_t n,
                            Op op);

}  // namespace rv
