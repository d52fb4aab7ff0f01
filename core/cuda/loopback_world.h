// The one-GPU loopback world (docs/DESIGN.md §5, transport cuda-loopback): all W logical ranks'
// arenas on one GPU, device-to-device copies as the byte mover, and the live reducer's
// owner dataflow with the same fold kernel: each owner p collects the W copies of its shard
// into its stacked table (slot r = the copy from rank r) in the given delivery order, folds
// ascending, and the reduced shards are copied back into every rank's arena (the
// all-gather), in pieces pipelined as a GPU rank of the fixed-order reducer moves them
// (core/cuda/loopback_pipeline.h). It proves one GPU's arithmetic against the contract on any
// single GPU.
#pragma once

#include <cstddef>
#include <vector>

#include "core/contract.h"
#include "core/oracle/emulated_world.h"

namespace rv {

// The slot stride of a stacked table for shards of at most `max_shard` elements: rounded
// up to whole 16-byte units, so every slot starts at one alignment and the fold kernel
// takes its vector path.
std::size_t stacked_slot_stride(std::size_t max_shard);

// Reduces arenas (one per logical rank, equal lengths) on `device`; returns every rank's
// reduced arena. `delivery` as for EmulatedWorld (empty: ascending). The copies of one
// round of deliveries run on several streams at once, so their completion order really is
// unordered. `pieces`: how many pieces each shard moves in (0: as many as a GPU rank of the
// fixed-order reducer; the pieces change no bit). Throws InputError for bad arenas or
// orders, RuntimeFailure for device errors.
std::vector<std::vector<float>> loopback_all_reduce(const std::vector<std::vector<float>>& arenas,
                                                    Op op, const DeliveryOrders& delivery,
                                                    int device, std::size_t pieces = 0);

}  // namespace rv
