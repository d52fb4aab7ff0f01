// How far a result is from the exact contract's (the correctly rounded sum, docs/DESIGN.md §2):
// per element the ulp distance, over an arena the count of differing elements and the largest
// and mean distance. `run --accuracy` measures live results with it, `golden --accuracy` the
// fixed-order goldens, and `compare` shows both.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/case_id.h"

namespace rv {

// The ulp distance between two binary32 values (0 for equal bits; NaN vs NaN counts 0 since
// NaNs are canonical; NaN vs a number counts as the largest distance; −0 and +0 are 0 apart).
std::uint32_t ulp_distance(float a, float b);
// The same distance counted in ulps of `dtype` (docs/DESIGN.md §2.5): both values are values of
// the dtype held widened, so their distance is taken between the dtype's own bit patterns.
std::uint32_t ulp_distance(float a, float b, DType dtype);

struct ErrorVsExact {
  std::uint64_t differing_elements = 0;
  std::uint32_t max_ulp = 0;
  double mean_ulp = 0;  // over all elements, equal ones included
};

// Accumulates ErrorVsExact element by element.
class ErrorMeter {
 public:
  explicit ErrorMeter(DType dtype = DType::kF32) : dtype_(dtype) {}
  void add(float result, float reference);
  ErrorVsExact finish() const;

 private:
  DType dtype_;
  std::uint64_t count_ = 0, differing_ = 0;
  std::uint32_t max_ulp_ = 0;
  long double ulp_sum_ = 0;
};

// The result of `id` (as its contract computes it: fixed-order from its id) against the
// streamed reduction of the same data under `reference` (exact, or fixed-order), in ulps of
// the case's dtype.
ErrorVsExact error_against(const CaseId& id, const std::vector<float>& result, Contract reference);

nlohmann::json to_json(const ErrorVsExact& error);
ErrorVsExact error_vs_exact_from_json(const nlohmann::json& json);  // throws InputError

}  // namespace rv
