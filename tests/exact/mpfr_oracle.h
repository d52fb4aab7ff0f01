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

// The same for a narrower binary format, given by its precision (bits, the hidden one
// included), the exponent of its smallest normal (x in [2^min_normal_exponent, ...)) and of the
// power of two its largest finite value lies below (overflow: RN of the exact value reaches
// 2^max_exponent): bf16 (8, -126, 128), f16 (11, -14, 16). The addends must be values of the
// format. Returns the result as its binary32 widening's bits (NaN as 0x7FC00000).
struct MpfrFormat {
  int precision;
  int min_normal_exponent;
  int max_exponent;
};
inline constexpr MpfrFormat kMpfrBinary32{24, -126, 128};
inline constexpr MpfrFormat kMpfrBFloat16{8, -126, 128};
inline constexpr MpfrFormat kMpfrFloat16{11, -14, 16};
std::uint32_t mpfr_exact_bits(const std::vector<float>& addends, Op op, const MpfrFormat& format);

}  // namespace rv
