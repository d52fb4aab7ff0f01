#include "verify/golden/accuracy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/dtype_law.h"
#include "core/fold_law.h"
#include "core/oracle/case_reduction.h"

namespace rv {

namespace {

// The distance between two sign-magnitude bit patterns whose sign bit is `sign_bit`, NaNs
// told apart by `is_nan`: −0 and +0 map to the same point of a monotone line.
template <class IsNan>
std::uint32_t ordered_distance(std::uint32_t ua, std::uint32_t ub, std::uint32_t sign_bit,
                               IsNan is_nan) {
  if (ua == ub) return 0;
  if (is_nan(ua) || is_nan(ub)) {
    return is_nan(ua) && is_nan(ub) ? 0 : std::numeric_limits<std::uint32_t>::max();
  }
  auto ordered = [sign_bit](std::uint32_t u) -> std::int64_t {
    return (u & sign_bit) ? -static_cast<std::int64_t>(u & (sign_bit - 1))
                          : static_cast<std::int64_t>(u);
  };
  const std::int64_t d = ordered(ua) - ordered(ub);
  const std::uint64_t distance = static_cast<std::uint64_t>(d < 0 ? -d : d);
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(distance, std::numeric_limits<std::uint32_t>::max()));
}

}  // namespace

std::uint32_t ulp_distance(float a, float b) {
  return ordered_distance(float_bits(a), float_bits(b), 0x80000000u, is_nan_bits);
}

std::uint32_t ulp_distance(float a, float b, DType dtype) {
  if (dtype == DType::kF32) return ulp_distance(a, b);
  // A NaN widened is a binary32 NaN; half_bits would make every NaN canonical, so tell NaNs
  // apart before narrowing.
  const bool nan_a = std::isnan(a), nan_b = std::isnan(b);
  if (nan_a || nan_b) return nan_a && nan_b ? 0 : std::numeric_limits<std::uint32_t>::max();
  const std::uint32_t exponent_mask = dtype == DType::kF16 ? 0x7C00u : 0x7F80u;
  auto is_nan = [exponent_mask](std::uint32_t u) {
    return (u & exponent_mask) == exponent_mask && (u & ~(exponent_mask | 0x8000u)) != 0;
  };
  return ordered_distance(half_bits(dtype, a), half_bits(dtype, b), 0x8000u, is_nan);
}

void ErrorMeter::add(float result, float reference) {
  const std::uint32_t d = ulp_distance(result, reference, dtype_);
  ++count_;
  if (d == 0) return;
  ++differing_;
  max_ulp_ = std::max(max_ulp_, d);
  ulp_sum_ += d;
}

ErrorVsExact ErrorMeter::finish() const {
  ErrorVsExact error;
  error.differing_elements = differing_;
  error.max_ulp = max_ulp_;
  error.mean_ulp =
      count_ == 0 ? 0.0 : static_cast<double>(ulp_sum_ / static_cast<long double>(count_));
  return error;
}

ErrorVsExact error_against(const CaseId& id, const std::vector<float>& result, Contract reference) {
  CaseId of_reference = id;
  of_reference.contract = reference;
  ErrorMeter meter(id.dtype);
  std::size_t offset = 0;
  stream_reference_reduction(of_reference, [&](const float* values, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) meter.add(result[offset + i], values[i]);
    offset += count;
  });
  return meter.finish();
}

nlohmann::json to_json(const ErrorVsExact& error) {
  return {{"differing_elements", error.differing_elements},
          {"max_ulp", error.max_ulp},
          {"mean_ulp", error.mean_ulp}};
}

ErrorVsExact error_vs_exact_from_json(const nlohmann::json& json) {
  try {
    ErrorVsExact error;
    error.differing_elements = json.at("differing_elements").get<std::uint64_t>();
    error.max_ulp = json.at("max_ulp").get<std::uint32_t>();
    error.mean_ulp = json.at("mean_ulp").get<double>();
    return error;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("error against exact: ") + e.what());
  }
}

}  // namespace rv
