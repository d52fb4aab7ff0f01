// Producing golden digests (docs/DESIGN.md §3): each case is reduced by EmulatedWorld under
// several seeded shuffled delivery orders and by the straight reference fold; all must agree
// bit for bit, and the streaming re-derivation `check` uses must give the same digest. A
// reduce-scatter case (coll=reduce-scatter) is EmulatedWorld's reduce-scatter under the same
// orders, its shards concatenated in rank order: its digest is the all-reduce's whenever
// every shard holds the all-reduce's bits, which is what the proof checks.
#pragma once

#include <cstdint>

#include "core/case_id.h"
#include "core/digest/digest.h"

namespace rv {

// Throws InternalError naming the case, the delivery order and the first differing rank
// and element when anything disagrees: that is a bug in this tool, never a golden.
Digest make_golden_digest(const CaseId& id, std::uint32_t orders);

}  // namespace rv
