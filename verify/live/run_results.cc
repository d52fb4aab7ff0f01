#include "verify/live/run_results.h"

#include <algorithm>
#include <iomanip>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/fold_law.h"
#include "core/shard_plan.h"

namespace rv {

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kOk:
      return "OK";
    case Verdict::kFailed:
      return "FAILED";
    case Verdict::kDiffers:
      return "DIFFERS";
    case Verdict::kSkipped:
      return "SKIPPED";
  }
  return "?";
}

namespace {

std::optional<Verdict> parse_verdict(const std::string& text) {
  for (Verdict v : {Verdict::kOk, Verdict::kFailed, Verdict::kDiffers, Verdict::kSkipped}) {
    if (to_string(v) == text) return v;
  }
  return std::nullopt;
}

Digest digest_from_json(const nlohmann::json& json) {
  const auto digest = parse_digest_hex(json.get<std::string>());
  if (!digest) throw InputError("report: '" + json.get<std::string>() + "' is not a digest");
  return *digest;
}

CaseId with_contract(CaseId id, Contract contract) {
  id.contract = contract;
  return id;
}

}  // namespace

CaseResult skipped_result(const CaseId& data_case, Contract contract, std::string why) {
  CaseResult result;
  result.id = with_contract(data_case, contract);
  result.verdict = Verdict::kSkipped;
  result.detail = std::move(why);
  return result;
}

bool must_equal_golden(const CaseId& data_case, Contract contract) {
  // W <= 2: one commutative addition, rounded once either way (for bf16/f16 through binary32
  // first, which is innocuous: 24 >= 2p + 2). A half-precision mean is the exception: the
  // library's sum is rounded to the dtype before the scaling, so it can overflow to ±Inf
  // where fixed-order's binary32 sum does not; it is held to the bound instead.
  const bool half_mean = data_case.dtype != DType::kF32 && data_case.op == Op::kMean;
  return contract != Contract::kLibrarySum || data_case.dist == Distribution::kExact ||
         (data_case.world <= 2 && !half_mean);
}

namespace {

std::string hex_bits(std::uint32_t bits) {
  static const char* digits = "0123456789abcdef";
  std::string text = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) text += digits[(bits >> shift) & 0xF];
  return text;
}

// "; rank 2 iteration 1: element 1234 is 0x..., the golden's 0x..." for every rank that
// named where its result left the golden.
// A reduce-scatter's result is every rank's shard in rank order: the element also names the
// rank whose shard holds it.
std::string first_differences_text(const std::vector<const RankRecord*>& records,
                                   const CaseId& data_case) {
  std::string text;
  const std::size_t s = padded_shard_size(static_cast<std::size_t>(data_case.count),
                                          data_case.world);
  for (std::size_t r = 0; r < records.size(); ++r) {
    if (records[r] == nullptr || !records[r]->first_difference) continue;
    const FirstDifference& d = *records[r]->first_difference;
    text += "; rank " + std::to_string(r) + " iteration " + std::to_string(d.iteration) +
            ": element " + std::to_string(d.element);
    if (data_case.coll == Collective::kReduceScatter && s > 0) {
      text += " (rank " + std::to_string(d.element / s) + "'s shard)";
    }
    text += " is " + hex_bits(d.bits);
    if (d.bound) {
      std::ostringstream bound;
      bound << std::setprecision(3) << *d.bound;
      text += ", fixed-order's " + hex_bits(d.golden_bits) + " (any association stays within " +
              bound.str() + " of it)";
    } else {
      text += ", the golden's " + hex_bits(d.golden_bits);
    }
  }
  return text;
}

}  // namespace

CaseResult decide_verdict(const CaseId& data_case, Contract contract, const Digest& expected,
                          const std::vector<const RankRecord*>& records) {
  CaseResult result;
  result.id = with_contract(data_case, contract);
  result.expected = expected;
  const std::uint32_t world = data_case.world;
  if (!records.empty() && records[0] != nullptr && records[0]->skipped) {
    return skipped_result(data_case, contract, *records[0]->skipped);
  }
  if (records.size() != world) {
    result.verdict = Verdict::kFailed;
    result.detail = "results from " + std::to_string(records.size()) + " of " +
                    std::to_string(world) + " ranks";
    return result;
  }
  std::string problems;
  auto note = [&problems](const std::string& text) {
    problems += (problems.empty() ? "" : "; ") + text;
  };
  for (std::uint32_t r = 0; r < world; ++r) {
    const RankRecord* record = records[r];
    if (record == nullptr || record->iteration_digests.empty()) {
      note("rank " + std::to_string(r) + " reported nothing");
      result.rank_digests.push_back(Digest{});
      continue;
    }
    result.iterations = static_cast<std::uint32_t>(record->iteration_digests.size());
    const Digest& first = record->iteration_digests.front();
    result.rank_digests.push_back(first);
    for (std::size_t k = 1; k < record->iteration_digests.size(); ++k) {
      if (record->iteration_digests[k] != first) {
        note("rank " + std::to_string(r) + " iteration " + std::to_string(k + 1) + " gave " +
             record->iteration_digests[k].hex() + ", iteration 1 " + first.hex());
        break;
      }
    }
  }
  for (std::uint32_t r = 1; r < world; ++r) {
    if (result.rank_digests[r] != result.rank_digests[0]) {
      note("ranks disagree: rank 0 has " + result.rank_digests[0].hex() + ", rank " +
           std::to_string(r) + " has " + result.rank_digests[r].hex());
      break;
    }
  }
  if (!records.empty() && records[0] != nullptr) {
    result.differing_elements = records[0]->differing_elements;
    result.max_ulp = records[0]->max_ulp;
    result.vs_exact = records[0]->vs_exact;
  }
  if (!problems.empty()) {
    result.verdict = Verdict::kFailed;
    result.detail = problems + first_differences_text(records, data_case);
    return result;
  }
  const Digest& digest = result.rank_digests[0];
  if (digest == expected) {
    result.verdict = Verdict::kOk;
    if (data_case.coll == Collective::kReduceScatter && must_equal_golden(data_case, contract)) {
      result.detail = "every rank's shard is the all-reduce's slice";
    }
    return result;
  }
  if (must_equal_golden(data_case, contract)) {
    result.verdict = Verdict::kFailed;
    result.detail = "digest " + digest.hex() + " differs from the golden " + expected.hex();
    if (contract == Contract::kLibrarySum) {
      result.detail += world <= 2 ? " (W <= 2: one commutative addition must match)"
                                  : " (exact data: every association is exact and must match)";
    }
  } else if (records[0] != nullptr && records[0]->first_difference &&
             records[0]->first_difference->bound) {
    // No reassociation lands that far: the library returned a wrong sum (library_sum_check.h).
    result.verdict = Verdict::kFailed;
    result.detail = "differs from fixed-order by more than any association of the addends can";
  } else {
    result.verdict = Verdict::kDiffers;
    result.detail = "differs from fixed-order";
  }
  if (result.differing_elements) {
    result.detail += ": " + std::to_string(*result.differing_elements) + " elements differ, max " +
                     std::to_string(result.max_ulp.value_or(0)) + " ulp";
  }
  if (result.verdict == Verdict::kFailed) result.detail += first_differences_text(records, data_case);
  return result;
}

nlohmann::json to_json(const RankReport& report) {
  nlohmann::json records = nlohmann::json::array();
  for (const RankRecord& record : report.records) {
    nlohmann::json digests = nlohmann::json::array();
    for (const Digest& d : record.iteration_digests) digests.push_back(d.hex());
    nlohmann::json item = {{"case", record.case_id},
                           {"contract", std::string(to_string(record.contract))},
                           {"iteration_digests", digests}};
    if (record.differing_elements) item["differing_elements"] = *record.differing_elements;
    if (record.max_ulp) item["max_ulp"] = *record.max_ulp;
    if (record.vs_exact) item["vs_exact"] = to_json(*record.vs_exact);
    if (record.skipped) item["skipped"] = *record.skipped;
    if (record.first_difference) {
      const FirstDifference& d = *record.first_difference;
      item["first_difference"] = {{"iteration", d.iteration},
                                  {"element", d.element},
                                  {"bits", d.bits},
                                  {"golden_bits", d.golden_bits}};
      if (d.bound) item["first_difference"]["bound"] = *d.bound;
    }
    records.push_back(item);
  }
  return {{"rank", report.rank}, {"world", report.world}, {"records", records}};
}

RankReport rank_report_from_json(const nlohmann::json& json) {
  try {
    RankReport report;
    report.rank = json.at("rank").get<std::uint32_t>();
    report.world = json.at("world").get<std::uint32_t>();
    for (const auto& item : json.at("records")) {
      RankRecord record;
      record.case_id = item.at("case").get<std::string>();
      const auto contract = parse_contract(item.at("contract").get<std::string>());
      if (!contract) throw InputError("rank report: bad contract");
      record.contract = *contract;
      for (const auto& d : item.at("iteration_digests")) {
        record.iteration_digests.push_back(digest_from_json(d));
      }
      if (item.contains("differing_elements")) {
        record.differing_elements = item["differing_elements"].get<std::uint64_t>();
      }
      if (item.contains("max_ulp")) record.max_ulp = item["max_ulp"].get<std::uint32_t>();
      if (item.contains("vs_exact")) record.vs_exact = error_vs_exact_from_json(item["vs_exact"]);
      if (item.contains("skipped")) record.skipped = item["skipped"].get<std::string>();
      if (item.contains("first_difference")) {
        const auto& d = item["first_difference"];
        record.first_difference =
            FirstDifference{d.at("iteration").get<std::uint32_t>(),
                            d.at("element").get<std::uint64_t>(), d.at("bits").get<std::uint32_t>(),
                            d.at("golden_bits").get<std::uint32_t>(), std::nullopt};
        if (d.contains("bound")) record.first_difference->bound = d["bound"].get<double>();
      }
      report.records.push_back(std::move(record));
    }
    return report;
  } catch (const nlohmann::json::exception& error) {
    throw InputError(std::string("rank report: ") + error.what());
  }
}

nlohmann::json to_json(const CaseResult& result) {
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t r = 0; r < result.rank_digests.size(); ++r) {
    const bool agrees = result.expected && result.rank_digests[r] == *result.expected;
    ranks.push_back(
        {{"rank", r}, {"digest", result.rank_digests[r].hex()}, {"matches_golden", agrees}});
  }
  nlohmann::json json = {{"case", format_case_id(result.id)},
                         {"contract", std::string(to_string(result.id.contract))},
                         {"w", result.id.world},
                         {"verdict", std::string(to_string(result.verdict))},
                         {"detail", result.detail},
                         {"iterations", result.iterations},
                         {"ranks", ranks}};
  json["expected"] = result.expected ? result.expected->hex() : "";
  json["digest"] = result.rank_digests.empty() ? "" : result.rank_digests[0].hex();
  if (result.differing_elements) json["differing_elements"] = *result.differing_elements;
  if (result.max_ulp) json["max_ulp"] = *result.max_ulp;
  if (result.vs_exact) json["vs_exact"] = to_json(*result.vs_exact);
  return json;
}

CaseResult case_result_from_json(const nlohmann::json& json) {
  try {
    CaseResult result;
    result.id = parse_case_id(json.at("case").get<std::string>());
    const auto verdict = parse_verdict(json.at("verdict").get<std::string>());
    if (!verdict) throw InputError("report: unknown verdict in " + json.dump());
    result.verdict = *verdict;
    result.detail = json.value("detail", "");
    result.iterations = json.value("iterations", 0u);
    const std::string expected = json.value("expected", "");
    if (!expected.empty()) result.expected = digest_from_json(expected);
    for (const auto& rank : json.at("ranks")) {
      result.rank_digests.push_back(digest_from_json(rank.at("digest")));
    }
    if (json.contains("differing_elements")) {
      result.differing_elements = json["differing_elements"].get<std::uint64_t>();
    }
    if (json.contains("max_ulp")) result.max_ulp = json["max_ulp"].get<std::uint32_t>();
    if (json.contains("vs_exact")) result.vs_exact = error_vs_exact_from_json(json["vs_exact"]);
    return result;
  } catch (const nlohmann::json::exception& error) {
    throw InputError(std::string("report: ") + error.what());
  }
}

nlohmann::json to_json(const WorldResults& world) {
  nlohmann::json results = nlohmann::json::array();
  for (const CaseResult& r : world.results) results.push_back(to_json(r));
  return {{"world", world.world},
          {"transport", world.transport},
          {"transport_library", world.transport_library},
          {"device", world.device},
          {"results", results},
          {"inputs_line", world.inputs_line}};
}

WorldResults world_results_from_json(const nlohmann::json& json) {
  try {
    WorldResults world;
    world.world = json.at("world").get<std::uint32_t>();
    world.transport = json.at("transport").get<std::string>();
    world.transport_library = json.at("transport_library").get<std::string>();
    world.device = json.value("device", "");
    world.inputs_line = json.value("inputs_line", "");
    for (const auto& r : json.at("results")) world.results.push_back(case_result_from_json(r));
    return world;
  } catch (const nlohmann::json::exception& error) {
    throw InputError(std::string("world results: ") + error.what());
  }
}

}  // namespace rv
