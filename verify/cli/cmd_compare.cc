// reduce-verify compare A.json B.json: lines up two run reports (two boxes, two NCCL
// versions, two GPUs): which cases agree, which differ (both digests), which exist in one
// only, how the fingerprints differ, and (reports made with --accuracy) each report's error
// against the exact contract. Exit 0 when every shared fixed-order and exact case agrees.
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <utility>

#include "verify/cli/commands.h"
#include "verify/golden/case_matrix.h"
#include "verify/common/exit_codes.h"
#include "verify/golden/report_reader.h"

namespace rv {
namespace {

struct CompareOptions {
  std::string a, b;
  bool verbose = false;
  std::vector<std::string> dtypes;  // --dtype: only the cases of these (empty: all)
  std::string coll;                 // --coll: only the cases of this collective (empty: all)
};

// The collective and dtype a case id names (absent: all-reduce, f32); ids that do not parse
// are kept, as before.
bool selected(const CompareOptions& options, const std::string& id) {
  if (!options.coll.empty()) {
    const bool scatter = id.find(",coll=reduce-scatter,") != std::string::npos;
    if (scatter != (options.coll == "reduce-scatter")) return false;
  }
  if (options.dtypes.empty()) return true;
  const std::size_t at = id.find(",dtype=");
  const std::string dtype =
      at == std::string::npos ? "f32" : id.substr(at + 7, id.find(',', at + 7) - (at + 7));
  return std::find(options.dtypes.begin(), options.dtypes.end(), dtype) != options.dtypes.end();
}

// Contracts with portable bits: their digests must agree between any two boxes.
bool portable(const std::string& id) {
  return id.rfind("contract=fixed-order,", 0) == 0 || id.rfind("contract=exact,", 0) == 0;
}

int run_compare(const CompareOptions& options) {
  const ReportDigests a = read_report(options.a);
  const ReportDigests b = read_report(options.b);

  std::size_t agree = 0, differ = 0, library_agree = 0, library_differ = 0;
  std::size_t only_a = 0, only_b = 0;
  for (const auto& [id, digest] : a.digests) {
    if (!selected(options, id)) continue;
    const auto other = b.digests.find(id);
    const bool fixed_order = portable(id);
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
    if (a.digests.count(id) || !selected(options, id)) continue;
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
  for (const auto* report : {&a, &b}) {
    if (report->accuracy.empty()) continue;
    std::cout << "error against exact in " << (report == &a ? "A" : "B")
              << " (contract dist: cases, differing elements, max ulp, mean ulp per case):\n";
    for (const auto& [key, summary] : report->accuracy) {
      std::cout << "  " << key << ": " << summary.cases << " cases, " << summary.differing
                << " differing, max " << summary.max_ulp << " ulp, mean "
                << summary.mean_ulp_sum / static_cast<double>(summary.cases) << " ulp\n";
    }
  }
  std::cout << "library-sum: " << library_agree << " agree, " << library_differ
            << " differ (reported, not failures)\n";
  std::cout << "only in A: " << only_a << ", only in B: " << only_b << "\n";
  std::cout << agree << " passed, " << differ << " failed\n";
  // A report whose own run failed proves nothing by agreeing with another one.
  bool run_failed = false;
  for (const auto& [report, path] : {std::pair{&a, &options.a}, std::pair{&b, &options.b}}) {
    if (report->failed_verdicts == 0 && report->world_failures == 0) continue;
    run_failed = true;
    std::cerr << "reduce-verify compare: " << *path << ": its run did not verify ("
              << report->failed_verdicts << " results FAILED, " << report->world_failures
              << " worlds failed)\n";
  }
  if (differ > 0 || run_failed) return kExitVerificationFailed;
  if (agree == 0) {
    std::cerr << "reduce-verify compare: the reports share no fixed-order or exact case\n";
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
      "one report only, fingerprint differences, and each report's error against the exact "
      "contract (reports made with run --accuracy). Exit 0 when every shared fixed-order and "
      "exact case agrees.");
  cmd->add_option("report_a", options->a, "a report from `run --report`")->required();
  cmd->add_option("report_b", options->b, "another report")->required();
  cmd->add_flag("-v,--verbose", options->verbose, "also list agreeing and one-sided cases");
  add_dtype_option(*cmd, options->dtypes,
                   "compare only the cases of these dtypes, e.g. bf16,f16 (default: all)");
  cmd->add_option("--coll", options->coll,
                  "compare only the cases of this collective: all-reduce or reduce-scatter "
                  "(default: all)")
      ->check(CLI::IsMember({"all-reduce", "reduce-scatter"}));
  cmd->callback([options, &exit_code] { exit_code = run_compare(*options); });
}

}  // namespace rv
