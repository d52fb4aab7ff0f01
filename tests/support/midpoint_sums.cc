#include "tests/support/midpoint_sums.h"

#include <cmath>
#include <cstddef>

namespace rv::test {

std::vector<std::vector<float>> slots_beside_float_midpoints(std::uint32_t world) {
  std::vector<std::vector<float>> elements;  // each: the 3 addends of slots 0-2
  for (float scale : {1.0f, 0x1p100f, 0x1p-100f}) {
    for (int g = 0; g <= 60; ++g) {
      for (float half_sign : {1.0f, -1.0f}) {
        for (float tiny_sign : {1.0f, -1.0f}) {
          const float tiny = std::ldexp(1.0f + 0x1p-23f * static_cast<float>(g % 5), -24 - g);
          elements.push_back({scale, half_sign * 0x1p-24f * scale, tiny_sign * tiny * scale});
        }
      }
    }
  }
  const std::size_t n = elements.size();
  std::vector<std::vector<float>> slots(world, std::vector<float>(n, 0.0f));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::uint32_t r = 0; r < 3 && r < world; ++r) slots[r][i] = elements[i][r];
    for (std::uint32_t r = 3; r + 1 < world; r += 2) {
      const float v = std::ldexp(1.0f, -3 - static_cast<int>(r % 7));
      slots[r][i] = v;
      slots[r + 1][i] = -v;
    }
  }
  return slots;
}

}  // namespace rv::test
