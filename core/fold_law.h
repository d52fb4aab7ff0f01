// The element law of the fixed-order contract (docs/DESIGN.md §2), shared by the CPU fold and
// the CUDA kernel so both compile the very same expressions.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace rv {

// The one NaN every contract writes. CPUs and GPUs produce different NaN bits from the same
// addition (NVIDIA's FADD gives 0x7FFFFFFF, x86 keeps the first operand's payload), so the
// payload is not part of any result.
inline constexpr std::uint32_t kCanonicalNanBits = 0x7FC00000u;

RV_HD std::uint32_t float_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

RV_HD float float_from_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

RV_HD std::uint64_t double_bits(double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

RV_HD double double_from_bits(std::uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

RV_HD bool is_nan_bits(std::uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }

// Writes every NaN as kCanonicalNanBits; every other value keeps its bits (−0.0 included).
RV_HD float canonicalize_nan(float value) {
  const std::uint32_t bits = float_bits(value);
  return is_nan_bits(bits) ? float_from_bits(kCanonicalNanBits) : value;
}

// r = 1.0f / W, computed in binary32. The mean is sum × r: the addends are never pre-scaled,
// because that would round every addend once more, coupling the result's rounding to W.
RV_HD float mean_scale(std::uint32_t world) { return 1.0f / static_cast<float>(world); }

}  // namespace rv
