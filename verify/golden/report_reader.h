// Reading a report for `reduce-verify compare`: a run report (`run --report`) or an accuracy
// report (`golden --accuracy`). Every field is checked for its type and range, and a bad one
// is refused naming the file and the field (`r.json: results[3].max_ulp: ...`), never read as
// something else (a negative ulp count, a number truncated to 32 bits, the second of two
// results for one case silently winning).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rv {

// A report's error against exact, summed over its results of one contract and distribution.
struct AccuracySummary {
  std::size_t cases = 0;
  std::uint64_t differing = 0;
  std::uint64_t max_ulp = 0;
  double mean_ulp_sum = 0;  // of the per-case mean ulp distances
};

struct ReportDigests {
  nlohmann::json fingerprint = nlohmann::json::object();
  std::map<std::string, std::string> digests;       // case id (with contract) → digest
  std::map<std::string, AccuracySummary> accuracy;  // "contract dist" → summary
  std::size_t failed_verdicts = 0;                  // results whose verdict was FAILED
  std::size_t world_failures = 0;                   // worlds that did not finish
};

// The report in `text`, read from `path` (which every message names). Throws InputError.
ReportDigests parse_report(std::string_view text, const std::string& path);

// Reads and parses the file; throws InputError naming it.
ReportDigests read_report(const std::string& path);

}  // namespace rv
