// An oracle for the exact contract that shares no code with it: GNU MPFR sums the addends
// exactly (mpfr_sum at a precision that holds any binary32 sum) and rounds once to binary32
// (24 bits, exponent range and subnormals of binary32, round-to-nearest-even).
#pragma once

#include <cstdint>
#include <vector>

#include "core/contract.h"

namespace rv {

// The contract's result for one element from its W addends (NaN as 0x7FC00000).
std::uint32_t mpfr_exact_bits(const std::vector<float>& addends, Op op);

}  // namespace rv
