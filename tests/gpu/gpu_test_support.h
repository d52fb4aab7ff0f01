// Shared by the GPU tests: the skip on a box without a device, and bitwise comparison of
// float arrays that names the first differing element (bits, not values: NaN != NaN and
// -0 == +0 would hide exactly what the contract is about).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/cuda/device_info.h"
#include "core/fold_law.h"

#define RV_SKIP_WITHOUT_GPU()                                                     \
  do {                                                                            \
    if (!::rv::cuda_device_present()) {                                           \
      GTEST_SKIP() << "no CUDA device on this box: " << ::rv::cuda_info().status; \
    }                                                                             \
  } while (false)

namespace rv::test {

// The bit views of core/fold_law.h, under the names these tests use.
inline std::uint32_t bits_of(float value) { return ::rv::float_bits(value); }
inline float from_bits(std::uint32_t bits) { return ::rv::float_from_bits(bits); }

// Success when both arrays hold the same bits; else the count of differing elements and the
// first one, with both bit patterns.
inline ::testing::AssertionResult same_bits(const std::vector<float>& expected,
                                            const std::vector<float>& actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure()
           << "sizes differ: " << expected.size() << " vs " << actual.size();
  }
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (bits_of(expected[i]) != bits_of(actual[i])) {
      if (differing++ == 0) first = i;
    }
  }
  if (differing == 0) return ::testing::AssertionSuccess();
  std::ostringstream out;
  out << differing << " of " << expected.size() << " elements differ; first at " << first
      << ": expected 0x" << std::hex << bits_of(expected[first]) << " (" << expected[first]
      << "), got 0x" << bits_of(actual[first]) << " (" << actual[first] << ")";
  return ::testing::AssertionFailure() << out.str();
}

// The host image of a stacked table: slot r's values at r × stride, and every gap between two
// slots holding `gap` (a poison value: a kernel that read a gap would carry it into a result).
inline std::vector<float> stack_slots(const std::vector<std::vector<float>>& slots,
                                      std::size_t stride, float gap) {
  const std::size_t n = slots[0].size();
  std::vector<float> table((slots.size() - 1) * stride + n, gap);
  for (std::size_t r = 0; r < slots.size(); ++r) {
    std::copy(slots[r].begin(), slots[r].end(),
              table.begin() + static_cast<std::ptrdiff_t>(r * stride));
  }
  return table;
}

// Every logical rank's arena of one case: rank r's n values of `dist` under `seed`.
inline std::vector<std::vector<float>> arenas_of(Distribution dist, std::uint32_t world,
                                                 std::size_t n, std::uint64_t seed) {
  std::vector<std::vector<float>> arenas;
  for (std::uint32_t r = 0; r < world; ++r) {
    arenas.push_back(generate_arena(ArenaSpec{kLatestGenerator, dist, seed}, r, n));
  }
  return arenas;
}

}  // namespace rv::test
