// Before a reduce-scatter moves any byte (docs/DESIGN.md §2.6), the ranks agree on what it is:
// contract, op, dtype, the arena's length and the shard size, and whether each rank's output
// buffer fits its shard. Every count of the exchanges that follow derives from these, so a
// rank that disagrees is an InputError on every rank, naming who has what, instead of a
// mismatched transfer (which aborts Gloo's receiver or hangs NCCL) or a wait that times out
// because one rank refused alone.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "core/contract.h"
#include "core/dtype.h"
#include "core/shard_plan.h"
#include "core/transport/transport.h"

namespace rv {

// Collective (one all-gather of an agreement record). Returns the padded shard plan of n
// elements over the transport's W ranks (padded_shard_plan: shard_size nullopt = FSDP's
// ⌈n / W⌉), the same on every rank. Throws InputError on every rank when the ranks disagree,
// when the shard size leaves elements in no shard, or when out_count (the elements of the
// caller's output buffer) is not this rank's shard length; the message names the numbers.
std::vector<Shard> agree_on_reduce_scatter(Transport& transport, Contract contract, Op op,
                                           DType dtype, std::size_t n,
                                           std::optional<std::size_t> shard_size,
                                           std::size_t out_count);

}  // namespace rv
