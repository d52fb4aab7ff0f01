// What a live run found, per case and contract (docs/DESIGN.md §2 verdicts), and how a world's
// ranks hand their findings to rank 0 and the supervisor: one small JSON file per rank in
// the job directory, so bookkeeping never needs the transport (or device memory).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/case_id.h"
#include "core/digest/digest.h"
#include "verify/golden/accuracy.h"

namespace rv {

// Where a rank's result first left its golden: the iteration (1-based), the element and both
// binary32 bit patterns. For a library-sum result held to the association bound
// (library_sum_check.h), `bound` is the largest distance from fixed-order's value any
// association allows.
struct FirstDifference {
  std::uint32_t iteration = 0;
  std::uint64_t element = 0;
  std::uint32_t bits = 0;
  std::uint32_t golden_bits = 0;
  std::optional<double> bound;
};

// What one rank saw for one (case, contract): the digest after every iteration, and for
// rank 0 of a library-sum run the element-wise comparison with the fixed-order reference.
struct RankRecord {
  std::string case_id;  // the fixed-order case id of the data (the golden line's id)
  Contract contract = Contract::kFixedOrder;
  std::vector<Digest> iteration_digests;
  std::optional<std::uint64_t> differing_elements;  // vs the reference fold
  std::optional<std::uint32_t> max_ulp;
  std::optional<ErrorVsExact> vs_exact;  // run --accuracy, rank 0, contracts other than exact
  // Set where the result must equal the golden (must_equal_golden) and did not, and on rank 0
  // where a library-sum result lies further from fixed-order's than any association can.
  std::optional<FirstDifference> first_difference;
  // Set when the contract could not run here (a library-sum of a dtype the transport's library
  // cannot sum): why. Every rank knows it alike, before anything is sent.
  std::optional<std::string> skipped;
};

struct RankReport {
  std::uint32_t rank = 0;
  std::uint32_t world = 0;
  std::vector<RankRecord> records;
};

enum class Verdict { kOk, kFailed, kDiffers, kSkipped };
std::string_view to_string(Verdict verdict);

struct CaseResult {
  CaseId id;  // the contract field is the contract that ran
  Verdict verdict = Verdict::kSkipped;
  std::string detail;                // why (failed, differs, skipped)
  std::optional<Digest> expected;    // the fixed-order golden
  std::vector<Digest> rank_digests;  // per rank: the digest of its first iteration
  std::uint32_t iterations = 0;
  std::optional<std::uint64_t> differing_elements;
  std::optional<std::uint32_t> max_ulp;
  std::optional<ErrorVsExact> vs_exact;
};

// Whether a result of `contract` on this data must equal its golden bit for bit: fixed-order
// and exact always; library-sum where every association is exact (`exact` data) or W <= 2.
bool must_equal_golden(const CaseId& data_case, Contract contract);

// docs/DESIGN.md §2: fixed-order and exact must equal their goldens on every rank; library-sum
// must equal fixed-order's where every association is exact or W ≤ 2 and is otherwise
// reported; all ranks and all iterations must agree. `expected` is the contract's golden.
// `records[r]` is rank r's record of this (case, contract).
CaseResult decide_verdict(const CaseId& data_case, Contract contract, const Digest& expected,
                          const std::vector<const RankRecord*>& records);

CaseResult skipped_result(const CaseId& data_case, Contract contract, std::string why);

// What rank 0 of a world concluded: the verdicts, and the transport facts for the report.
struct WorldResults {
  std::uint32_t world = 0;
  std::string transport;
  std::string transport_library;
  std::string device;
  std::vector<CaseResult> results;
  // --inputs runs: the emulation's digest, for the `digest`-style output line.
  std::string inputs_line;
};

// The job directory file rank 0 writes its WorldResults to.
inline constexpr const char* kWorldResultsFile = "world-results.json";

nlohmann::json to_json(const RankReport& report);
RankReport rank_report_from_json(const nlohmann::json& json);  // throws InputError
nlohmann::json to_json(const CaseResult& result);
CaseResult case_result_from_json(const nlohmann::json& json);  // throws InputError
nlohmann::json to_json(const WorldResults& world);
WorldResults world_results_from_json(const nlohmann::json& json);  // throws InputError

}  // namespace rv
