#include "tests/support/bit_difference.h"

#include <cstdint>
#include <cstring>
#include <sstream>

namespace rv::test {

std::optional<std::size_t> first_bit_difference(const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (std::memcmp(a + i, b + i, sizeof(float)) != 0) return i;
  }
  return std::nullopt;
}

std::string describe_difference(const float* expected, const float* actual, std::size_t i) {
  std::uint32_t e = 0, a = 0;
  std::memcpy(&e, expected + i, sizeof e);
  std::memcpy(&a, actual + i, sizeof a);
  std::ostringstream out;
  out << "element " << i << ": expected 0x" << std::hex << e << " got 0x" << a;
  return out.str();
}

}  // namespace rv::test
