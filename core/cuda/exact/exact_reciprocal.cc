// The reciprocal behind the round kernels' mean (MeanDivision::kReciprocal): a divisor's
// magic number and shift, computed once on the host per launch.
#include <algorithm>
#include <cstdint>

#include "core/cuda/exact/exact_kernel.h"
#include "core/error.h"
#include "core/exact/exact_law.h"

namespace rv::detail {

// floor(x / W) = floor(x × m / 2^k) for every x < 2^N (N = 53) when 2^k ≤ m × W ≤ 2^k +
// 2^(k − N): write x = qW + r; then x·m / 2^k = q + r/W + x·e / (W·2^k) with e = m·W − 2^k,
// and x·e < 2^N · W ≤ 2^k · W / 2^(k−N) … < 2^k, so the sum stays below q + 1. With m =
// ceil(2^k / W), e < W ≤ 2^l (l = ceil(log2 W)), so k ≥ N + l suffices. k = max(64, N + l):
// the quotient is the high word of the 128-bit product shifted by k − 64, and m < 2^64 for
// W ≥ 2 (m ≤ 2^63 + 1 when k = 64; m < 2^54 + 1 when k = N + l > 64, as W > 2^(l−1)).
Reciprocal reciprocal_of(std::uint32_t divisor) {
  RV_ENFORCE_GE(InputError, divisor, 2u, "reciprocal_of: the divisor");
  RV_ENFORCE_LE(InputError, divisor, exact::kMaxWorld, "reciprocal_of: the divisor");
  constexpr int kDividendBits = 53;
  int l = 0;
  while ((std::uint64_t{1} << l) < divisor) ++l;
  const int k = std::max(64, kDividendBits + l);
  // floor((2^k − 1) / W) by long division in 32-bit digits: 2^k − 1 is the digits
  // (2^(k−64) − 1, 2^32 − 1, 2^32 − 1); then m = that + 1 = ceil(2^k / W).
  const std::uint64_t digits[3] = {(std::uint64_t{1} << (k - 64)) - 1, 0xFFFFFFFFu, 0xFFFFFFFFu};
  std::uint64_t remainder = 0, quotient[3];
  for (int i = 0; i < 3; ++i) {
    const std::uint64_t cur = (remainder << 32) | digits[i];
    quotient[i] = cur / divisor;
    remainder = cur % divisor;
  }
  if (quotient[0] != 0) throw InternalError("reciprocal_of: the reciprocal exceeds 64 bits");
  Reciprocal r;
  r.magic = ((quotient[1] << 32) | quotient[2]) + 1;
  r.shift = k - 64;
  r.divisor = divisor;
  return r;
}

}  // namespace rv::detail
