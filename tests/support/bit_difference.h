// Where two float arrays first differ bit for bit, and how to say so: what the reducer and
// transport tests report when a result is not the reference's bits.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace rv::test {

std::optional<std::size_t> first_bit_difference(const float* a, const float* b, std::size_t n);

// "element 7: expected 0x3f800000 got 0x3f800001"
std::string describe_difference(const float* expected, const float* actual, std::size_t i);

}  // namespace rv::test
