// reduce-verify compare A.json B.json: lines up two run reports (two boxes, two NCCL
// versions, two GPUs): which cases agree, which differ (both digests), which exist in one
// only, and how the fingerprints differ. Exit 0 when every shared fixed-order case agrees.
#include <iostream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "verify/cli/commands.h"
#include "verify/common/exit_codes.h"
#include "verify/common/file_io.h"

namespace rv {
namespace {

struct CompareOptions {
  std::string a, b;
  bool verbose = false;
};

struct ReportDigests {
  nlohmann::json fingerprint;
  std::map<std::string, std::string> digests;  // case id (with contract) → digest
};

ReportDigests load(const std::string& path) {
  const std::string text = read_file_bytes(path, std::uint64_t{1} << 30);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(path + ": not JSON: " + error.what());
  }
  if (!json.is_object() || !json.contains("results") || !json["results"].is_array()) {
    throw InputError(path + ": not a reduce-verify run report (no \"results\" array)");
  }
  ReportDigests report;
  report.fingerprint = json.value("fingerprint", nlohmann::json::object());
  for (const auto& result : json["results"]) {
    if (!result.is_object() || !result.contains("case")) {
      throw InputError(path + ": a result without a \"case\"");
    }
    const std::string verdict = result.value("verdict", "");
    const std::string digest = result.value("digest", "");
    if (verdict == "SKIPPED" || digest.empty()) continue;
    report.digests[result["case"].get<std::string>()] = digest;
  }
  return report;
}

int run_compare(const CompareOptions& options) {
  const ReportDigests a = load(options.a);
  const ReportDigests b = load(options.b);

  std::size_t agree = 0, differ = 0, library_agree = 0, library_differ = 0;
  std::size_t only_a = 0, only_b = 0;
  for (const auto& [id, digest] : a.digests) {
    const auto other = b.digests.find(id);
    const bool fixed_order = id.rfind("contract=fixed-order,", 0) == 0;
    if (other == b.digests.end()) {
      ++only_a;
      if (options.verbose) std::cout << "only in A: " << id << "\n";
      continue;
    }
    if (digest == other->second) {
      ++(fixed_order ? agree : library_agree);
      if (options.verbose) std::cout << id << ": AGREE " << digest << "\n";
    } else {
      ++(fixed_order ? differ : library_differ);
      std::cout << id << ": " << (fixed_order ? "DIFFER" : "DIFFER (library-sum, reported)")
                << " A " << digest << " B " << other->second << "\n";
    }
  }
  for (const auto& [id, digest] : b.digests) {
    if (a.digests.count(id)) continue;
    ++only_b;
    if (options.verbose) std::cout << "only in B: " << id << "\n";
  }

  std::cout << "fingerprints (A: " << options.a << ", B: " << options.b << "):\n";
  std::map<std::string, std::pair<std::string, std::string>> keys;
  for (const auto& [key, value] : a.fingerprint.items()) keys[key].first = value.dump();
  for (const auto& [key, value] : b.fingerprint.items()) keys[key].second = value.dump();
  std::size_t same = 0;
  for (const auto& [key, values] : keys) {
    if (values.first == values.second) {
      ++same;
      continue;
    }
    std::cout << "  " << key << ": A " << (values.first.empty() ? "(none)" : values.first)
              << " | B " << (values.second.empty() ? "(none)" : values.second) << "\n";
  }
  std::cout << "  (" << same << " fields equal)\n";
  std::cout << "library-sum: " << library_agree << " agree, " << library_differ
            << " differ (reported, not failures)\n";
  std::cout << "only in A: " << only_a << ", only in B: " << only_b << "\n";
  std::cout << agree << " passed, " << differ << " failed\n";
  if (differ > 0) return kExitVerificationFailed;
  if (agree == 0) {
    std::cerr << "reduce-verify compare: the reports share no fixed-order case\n";
    return kExitVerificationFailed;
  }
  return kExitVerified;
}

}  // namespace

void setup_compare(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Line up two run reports (e.g. from two boxes): agreeing and differing cases, cases in "
      "one report only, fingerprint differences. Exit 0 when every shared fixed-order case "
      "agrees.");
  cmd->add_option("report_a", options->a, "a report from `run --report`")->required();
  cmd->add_option("report_b", options->b, "another report")->required();
  cmd->add_flag("-v,--verbose", options->verbose, "also list agreeing and one-sided cases");
  cmd->callback([options, &exit_code] { exit_code = run_compare(*options); });
}

}  // namespace rv
