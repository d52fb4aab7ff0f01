#include "verify/golden/accuracy.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/fold_law.h"
#include "core/oracle/case_reduction.h"

namespace rv {

std::uint32_t ulp_distance(float a, float b) {
  const std::uint32_t ua = float_bits(a);
  const std::uint32_t ub = float_bits(b);
  if (ua == ub) return 0;
  if (is_nan_bits(ua) || is_nan_bits(ub)) {
    return is_nan_bits(ua) && is_nan_bits(ub) ? 0 : std::numeric_limits<std::uint32_t>::max();
  }
  // Map sign-magnitude to a monotone unsigned line: −0 and +0 are adjacent-equal.
  auto ordered = [](std::uint32_t u) -> std::int64_t {
    return (u & 0x80000000u) ? -static_cast<std::int64_t>(u & 0x7FFFFFFFu)
                             : static_cast<std::int64_t>(u);
  };
  const std::int64_t d = ordered(ua) - ordered(ub);
  const std::uint64_t distance = static_cast<std::uint64_t>(d < 0 ? -d : d);
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(distance, std::numeric_limits<std::uint32_t>::max()));
}

void ErrorMeter::add(float result, float reference) {
  const std::uint32_t d = ulp_distance(result, reference);
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
  ErrorMeter meter;
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
