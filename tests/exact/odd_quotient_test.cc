// exact::odd_quotient (core/exact/odd_quotient.h), the half exact kernels' mean for W not a
// power of two, held to exact integer arithmetic on the CPU: the result is y / W itself when
// that is a double, and otherwise the odd double whose two neighbours bracket y / W strictly.
// Quotients at every binade boundary (y = W × 2^k and its neighbours), exact quotients, sums of
// up to 53 significant bits of every exponent the kernels' sums reach, both signs, ±0.
#include "core/exact/odd_quotient.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>

namespace rv::exact {
namespace {

__extension__ typedef __int128 Int128;

// The sign of |y| − x × w, exactly (x ≥ 0 finite, normal or zero; |y| normal or zero).
int compare(double y, double x, std::uint32_t w) {
  int ey = 0, ex = 0;
  const double fy = std::frexp(std::fabs(y), &ey);
  const double fx = std::frexp(x, &ex);
  const auto my = static_cast<Int128>(std::ldexp(fy, 53));  // |y| = my × 2^(ey − 53)
  const auto mx = static_cast<Int128>(std::ldexp(fx, 53));
  const int bottom = std::min(ey, ex);
  EXPECT_LT(std::max(ey, ex) - bottom, 40) << "operands too far apart to compare";
  const Int128 left = my << (ey - bottom);
  const Int128 right = (mx * static_cast<Int128>(w)) << (ex - bottom);
  if (my == 0) return mx == 0 ? 0 : -1;
  if (mx == 0) return 1;
  return left < right ? -1 : left > right ? 1 : 0;
}

// "" when q is y / w rounded to odd.
std::string check(double y, std::uint32_t w) {
  const double q = odd_quotient(y, static_cast<double>(w), 1.0 / static_cast<double>(w));
  std::ostringstream where;
  where.precision(17);
  where << "y = " << y << " (" << std::hexfloat << y << "), W = " << std::dec << w << ", got "
        << std::hexfloat << q;
  if (std::signbit(q) != std::signbit(y)) return where.str() + ": the sign differs";
  const double a = std::fabs(q);
  const int at = compare(y, a, w);
  if (at == 0) return "";  // exact
  const std::uint64_t bits = double_bits(a);
  if ((bits & 1u) == 0) return where.str() + ": even, but not the exact quotient";
  const double below = double_from_bits(bits - 1), above = double_from_bits(bits + 1);
  if (compare(y, below, w) <= 0 || compare(y, above, w) >= 0) {
    return where.str() + ": the quotient is not strictly between its neighbours";
  }
  return "";
}

constexpr std::uint32_t kWorlds[] = {
    3, 5, 6, 7, 9, 10, 11, 12, 13, 100, 1000, 1023, 65535, 99999, (1u << 20) - 1};

TEST(OddQuotient, BinadeBoundariesAndExactQuotients) {
  for (const std::uint32_t w : kWorlds) {
    for (const int k : {-900, -133, -60, -1, 0, 1, 52, 300, 900}) {
      const double edge = std::ldexp(static_cast<double>(w), k);  // y / w = 2^k
      for (const double y : {edge, std::nextafter(edge, 0.0), std::nextafter(edge, 2 * edge),
                             std::ldexp(static_cast<double>(w) * 3.0, k),
                             std::ldexp(static_cast<double>(w) * 4503599627370495.0 /* 2^52 − 1 */
                                            / static_cast<double>(w),
                                        k)}) {
        for (const double signed_y : {y, -y}) {
          const std::string difference = check(signed_y, w);
          ASSERT_TRUE(difference.empty()) << difference;
        }
      }
    }
    for (const double zero : {0.0, -0.0}) ASSERT_TRUE(check(zero, w).empty()) << check(zero, w);
  }
}

TEST(OddQuotient, SumsOfEverySize) {
  std::mt19937_64 random(37);
  for (const std::uint32_t w : kWorlds) {
    for (int i = 0; i < 20000; ++i) {
      const int bits = 1 + static_cast<int>(random() % 53);  // significant bits of the sum
      const auto mantissa =
          static_cast<double>((random() >> (64 - bits)) | (std::uint64_t{1} << (bits - 1)));
      const int exponent = -900 + static_cast<int>(random() % 1800);
      const double y = std::ldexp(mantissa, exponent - bits) * ((random() & 1) != 0 ? -1 : 1);
      const std::string difference = check(y, w);
      ASSERT_TRUE(difference.empty()) << difference;
    }
  }
}

}  // namespace
}  // namespace rv::exact
