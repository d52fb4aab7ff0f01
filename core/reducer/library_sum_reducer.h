// The library-sum contract (docs/DESIGN.md §2): the transport library's own sum all-reduce
// (Gloo's ring allreduce, ncclAllReduce), then the mean scale and the NaN rule applied by
// us. No portability promise: its bits follow the library's association order.
#pragma once

#include <cstddef>

#include "core/contract.h"
#include "core/dtype.h"
#include "core/reducer/fixed_order_device.h"
#include "core/transport/transport.h"

namespace rv {

// In place over the n floats of `arena` (in the device's memory); collective. bf16/f16
// (docs/DESIGN.md §2.5): the arena holds the dtype's values widened; the library sums their
// 2-byte form (Transport::library_sum_half, InputError where it has none).
void library_sum_all_reduce(Transport& transport, FixedOrderDevice& device, float* arena,
                            std::size_t n, Op op, DType dtype = DType::kF32);

// The library's own reduce-scatter (Transport::library_reduce_scatter: ncclReduceScatter;
// Gloo's ring allreduce, as torch's ProcessGroupGloo runs it) over FSDP's padded plan
// (docs/DESIGN.md §2.6): `out` (out_count elements, the device's memory) receives this rank's
// shard, the mean scale and the NaN rule applied as in library_sum_all_reduce. The ranks
// agree first (agree_on_reduce_scatter), and a transport with no such collective for `dtype`
// refuses with InputError on every rank before anything moves. `arena` is read only.
void library_sum_reduce_scatter(Transport& transport, FixedOrderDevice& device, const float* arena,
                                std::size_t n, float* out, std::size_t out_count, Op op,
                                DType dtype = DType::kF32);

}  // namespace rv
