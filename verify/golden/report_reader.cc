#include "verify/golden/report_reader.h"

#include <algorithm>

#include "core/case_id.h"
#include "core/error.h"
#include "verify/common/file_io.h"

namespace rv {
namespace {

constexpr const char* kFormats[] = {"reduce-verify run report 1",
                                    "reduce-verify golden accuracy 1"};
constexpr const char* kVerdicts[] = {"OK", "FAILED", "DIFFERS", "SKIPPED"};

const char* type_of(const nlohmann::json& value) {
  if (value.is_number_float()) return "a fraction";
  if (value.is_number_unsigned()) return "an unsigned integer";
  if (value.is_number_integer()) return "a negative integer";
  return value.type_name();
}

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  [[noreturn]] void refuse(const std::string& field, const std::string& why) const {
    throw InputError(path_ + ": " + field + ": " + why);
  }

  const std::string& text(const nlohmann::json& value, const std::string& field) const {
    if (!value.is_string())
      refuse(field, std::string("expected a string, found ") + type_of(value));
    return value.get_ref<const std::string&>();
  }

  std::uint64_t count(const nlohmann::json& value, const std::string& field) const {
    if (!value.is_number_unsigned()) {
      refuse(field, std::string("expected a non-negative integer, found ") + type_of(value) + " " +
                        value.dump());
    }
    return value.get<std::uint64_t>();
  }

  double fraction(const nlohmann::json& value, const std::string& field) const {
    if (!value.is_number() || !(value.get<double>() >= 0)) {
      refuse(field, std::string("expected a non-negative number, found ") + type_of(value) + " " +
                        value.dump());
    }
    return value.get<double>();
  }

 private:
  const std::string& path_;
};

}  // namespace

ReportDigests parse_report(std::string_view text, const std::string& path) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(path + ": not JSON: " + error.what());
  }
  const Reader read(path);
  if (!json.is_object() || !json.contains("results") || !json["results"].is_array()) {
    throw InputError(path + ": not a reduce-verify run report (no \"results\" array)");
  }
  if (!json.contains("format")) read.refuse("format", "missing (not a reduce-verify report)");
  const std::string& format = read.text(json["format"], "format");
  if (std::find(std::begin(kFormats), std::end(kFormats), format) == std::end(kFormats)) {
    read.refuse("format", "'" + format + "' is not one this version reads ('" + kFormats[0] +
                              "' or '" + kFormats[1] + "')");
  }
  ReportDigests report;
  if (json.contains("fingerprint")) {
    if (!json["fingerprint"].is_object()) {
      read.refuse("fingerprint",
                  std::string("expected an object, found ") + type_of(json["fingerprint"]));
    }
    report.fingerprint = json["fingerprint"];
  }
  if (json.contains("world_failures")) {
    if (!json["world_failures"].is_array()) {
      read.refuse("world_failures",
                  std::string("expected an array, found ") + type_of(json["world_failures"]));
    }
    report.world_failures = json["world_failures"].size();
  }
  std::map<std::string, std::size_t> listed_at;  // case id → index in results
  const auto& results = json["results"];
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& result = results[i];
    const std::string at = "results[" + std::to_string(i) + "]";
    if (!result.is_object() || !result.contains("case")) {
      throw InputError(path + ": " + at + ": a result without a \"case\"");
    }
    const std::string& id = read.text(result["case"], at + ".case");
    const std::string verdict =
        result.contains("verdict") ? read.text(result["verdict"], at + ".verdict") : "";
    if (!verdict.empty() &&
        std::find(std::begin(kVerdicts), std::end(kVerdicts), verdict) == std::end(kVerdicts)) {
      read.refuse(at + ".verdict", "'" + verdict + "' is not OK, FAILED, DIFFERS or SKIPPED");
    }
    const std::string digest =
        result.contains("digest") ? read.text(result["digest"], at + ".digest") : "";
    if (verdict == "FAILED") ++report.failed_verdicts;
    if (verdict == "SKIPPED" || digest.empty()) continue;
    const auto [first, added] = listed_at.emplace(id, i);
    if (!added) {
      read.refuse(at + ".case", "'" + id + "' is listed twice (first as results[" +
                                    std::to_string(first->second) + "])");
    }
    report.digests[id] = digest;
    if (!result.contains("vs_exact")) continue;
    const auto& e = result["vs_exact"];
    if (!e.is_object()) {
      read.refuse(at + ".vs_exact", std::string("expected an object, found ") + type_of(e));
    }
    CaseId parsed;
    try {
      parsed = parse_case_id(id);  // a report's ids are canonical
    } catch (const InputError& error) {
      read.refuse(at + ".case", error.what());
    }
    // f32 keys stay "contract dist"; a half-precision case's error is in its own ulps, so it
    // is summed apart: "contract bf16 dist".
    const std::string dtype =
        parsed.dtype == DType::kF32 ? "" : std::string(to_string(parsed.dtype)) + " ";
    AccuracySummary& summary = report.accuracy[std::string(to_string(parsed.contract)) + " " +
                                               dtype + std::string(to_string(parsed.dist))];
    ++summary.cases;
    if (e.contains("differing_elements")) {
      summary.differing += read.count(e["differing_elements"], at + ".vs_exact.differing_elements");
    }
    if (e.contains("max_ulp")) {
      summary.max_ulp =
          std::max(summary.max_ulp, read.count(e["max_ulp"], at + ".vs_exact.max_ulp"));
    }
    if (e.contains("mean_ulp")) {
      summary.mean_ulp_sum += read.fraction(e["mean_ulp"], at + ".vs_exact.mean_ulp");
    }
  }
  return report;
}

ReportDigests read_report(const std::string& path) {
  return parse_report(read_file_bytes(path, std::uint64_t{1} << 30), path);
}

}  // namespace rv
