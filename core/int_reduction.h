// The element-wise reductions of a library's integer all-reduce (the exact contract's
// agreement and sum rounds; docs/DESIGN.md §2): what the transports perform and what the GPU's
// combine kernel emulates. Integer addition and max are associative and commutative, so any
// algorithm, channel count or protocol the library picks gives the same bits.
#pragma once

#include <cstdint>

namespace rv {

enum class IntReduction : std::uint8_t { kSum, kMax };

}  // namespace rv
