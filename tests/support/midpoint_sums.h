// Stacked tables whose exact sums lie just beside a binary32 rounding boundary, with windows
// that grow bit by bit: the data that tells a correctly rounded sum from one rounded twice
// (a double sum taken where it is not exact). Shared by the host's and the GPU's tests of the
// stacked exact reduction.
#pragma once

#include <cstdint>
#include <vector>

namespace rv::test {

// W ≥ 3 slots of the same length. Element by element, slots 0-2 hold x, ± half an ulp of x
// and ± a tiny value 2^-g of that half ulp (g = 0 … 60; near 1, 2^100 and 2^-100, where the
// tiny values are subnormal or underflow to 0), so the exact sum is a float midpoint nudged
// up or down, and the window widens past a double's 53 bits (from g ≈ 29 a double sum lands
// on the midpoint and rounds to even the wrong way) and past one int64 limb. Slots 3 … W − 1
// hold pairs ±v that cancel exactly but widen the window; an odd one left over holds 0.
std::vector<std::vector<float>> slots_beside_float_midpoints(std::uint32_t world);

}  // namespace rv::test
