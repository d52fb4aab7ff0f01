// The window the bf16/f16 exact kernels (core/cuda/exact/exact_stacked_half_kernel.cu) check
// on packed lanes, one definition for the kernels and the CPU test that holds it to the law
// (tests/exact/half_window_test.cc).
//
// A unit keeps, per 32-bit word, both elements' largest magnitude and smallest magnitude less
// one as 16-bit lanes (a ±0 gives 0xFFFF, never the minimum unless every addend is ±0). With
// l and s those lanes, an element is flagged (must be summed another way) when l − s ≥ c,
// c = (D << shift) + 1, shift the dtype's exponent position (7 for bf16, 10 for f16): then
// l's biased exponent may exceed s's by more than D. Also flagged: l at or above `top` (±Inf
// and NaN).
// In lanes: reach = 0x8000 − c, cap = top − c, and with s'' = min(s, l, cap) the lane's
// l + reach − s'' has bit 15 set exactly when l − s'' ≥ c. No lane borrows from the other:
// 0 ≤ l − s'' ≤ 0x7FFF. When l ≥ top, s'' ≤ cap and l − s'' ≥ c; when s > cap and l < top,
// l − s < c and l − cap < c (the window is narrow). An element of ±0s only has s'' = 0 and
// l = 0: never flagged.
//
// What D must be for a sum in a format of q significant bits to be exact: with W addends of p
// significant bits, c = ⌈log2 W⌉, every partial sum lies below 2^(l + c) and on the grid of the
// smallest addend's last bit, 2^(s − (p − 1)) (in units of the dtype's exponent; a subnormal's
// field 0 only widens the bound), so l − s + p + c ≤ q suffices: D = q − p − c.
//   double (q = 53), bf16 (p = 8): D = 45 − c   (f16 sums below W = 2^13 always fit a double)
// A D below zero flags every element. (A float window, D = 16 − c for bf16 and 13 − c for f16,
// was tried for a float-first kernel and is recorded in docs/results.md: no faster.)
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/host_device.h"

namespace rv::exact {

struct LaneWindow {
  std::uint32_t reach;  // 0x8000 − c in both lanes
  std::uint32_t cap;    // top − c in both lanes
};

// Both 16-bit lanes' minimum (__vminu2 on the device).
RV_HD std::uint32_t lane_min(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __vminu2(a, b);
#else
  const std::uint32_t low = std::min(a & 0xFFFFu, b & 0xFFFFu);
  const std::uint32_t high = std::min(a >> 16, b >> 16);
  return low | (high << 16);
#endif
}

// Both 16-bit lanes' maximum (__vmaxu2 on the device).
RV_HD std::uint32_t lane_max(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __vmaxu2(a, b);
#else
  const std::uint32_t low = std::max(a & 0xFFFFu, b & 0xFFFFu);
  const std::uint32_t high = std::max(a >> 16, b >> 16);
  return low | (high << 16);
#endif
}

// Bit 15 of a lane set when that element is flagged (see the top of the file).
RV_HD std::uint32_t flagged_lanes(std::uint32_t largest, std::uint32_t smallest_less_one,
                                  LaneWindow w) {
  const std::uint32_t low = lane_min(lane_min(smallest_less_one, largest), w.cap);
  return (largest + w.reach - low) & 0x80008000u;
}

// The window of D binades (every element flagged when D < 0) for exponents at bit `shift`,
// flagging magnitudes at or above `top`.
RV_HD LaneWindow lane_window(int binades, std::uint32_t shift, std::uint32_t top) {
  if (binades < 0) return LaneWindow{0x80008000u, (top - 1u) * 0x00010001u};
  const std::uint32_t c = (static_cast<std::uint32_t>(binades) << shift) + 1u;
  return LaneWindow{(0x8000u - c) * 0x00010001u, (top - c) * 0x00010001u};
}

// A double sum of bf16 addends (D = 45 − ⌈log2 W⌉; ±Inf and NaN flagged).
RV_HD LaneWindow double_window_bf16(int log2_world_ceiling) {
  return lane_window(45 - log2_world_ceiling, 7, 0x7F80u);
}

}  // namespace rv::exact
