#include "verify/live/run_report.h"

#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "verify/common/exit_codes.h"
#include "verify/common/file_io.h"
#include "verify/golden/fingerprint.h"
#include "verify/live/transport_factory.h"

namespace rv {
namespace {

std::string result_line(const CaseResult& r) {
  std::string line = format_case_id(r.id) + ": " + std::string(to_string(r.verdict));
  if (!r.rank_digests.empty()) line += " " + r.rank_digests[0].hex();
  if (!r.detail.empty()) line += " (" + r.detail + ")";
  return line;
}

// Skips share a few reasons (a world larger than --max-world, a contract the transport
// lacks) and can run to a thousand cases: up to kListed of a reason are listed, more are one
// line with the count and the first id. Every skipped id is in --report and --junit.
void print_skipped(const std::vector<CaseResult>& skipped) {
  constexpr std::size_t kListed = 3;
  std::vector<std::string> reasons;  // in order of first appearance
  std::map<std::string, std::vector<const CaseResult*>> by_reason;
  for (const CaseResult& r : skipped) {
    auto& cases = by_reason[r.detail];
    if (cases.empty()) reasons.push_back(r.detail);
    cases.push_back(&r);
  }
  for (const std::string& reason : reasons) {
    const auto& cases = by_reason[reason];
    if (cases.size() <= kListed) {
      for (const CaseResult* r : cases) std::cout << result_line(*r) << "\n";
    } else {
      std::cout << "SKIPPED " << cases.size() << " cases (" << reason << "), the first "
                << format_case_id(cases.front()->id) << " (all in --report and --junit)\n";
    }
  }
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void write_text(const std::string& path, const std::string& text) {
  write_file_atomically(path, text.data(), text.size());
}

std::string junit(const std::vector<WorldResults>& worlds, const std::vector<CaseResult>& skipped,
                  const std::vector<WorldFailure>& failures) {
  std::ostringstream cases;
  std::size_t tests = 0, failed = 0, skips = 0;
  auto add = [&](const CaseResult& r, const std::string& transport) {
    ++tests;
    cases << "  <testcase classname=\"reduce-verify." << xml_escape(transport) << "\" name=\""
          << xml_escape(format_case_id(r.id)) << "\">";
    if (r.verdict == Verdict::kFailed) {
      ++failed;
      cases << "<failure message=\"" << xml_escape(r.detail) << "\"/>";
    } else if (r.verdict == Verdict::kSkipped) {
      ++skips;
      cases << "<skipped message=\"" << xml_escape(r.detail) << "\"/>";
    } else if (r.verdict == Verdict::kDiffers) {
      cases << "<system-out>" << xml_escape(r.detail) << "</system-out>";
    }
    cases << "</testcase>\n";
  };
  for (const WorldResults& w : worlds) {
    for (const CaseResult& r : w.results) add(r, w.transport);
  }
  for (const CaseResult& r : skipped) add(r, "skipped");
  for (const WorldFailure& f : failures) {
    for (const CaseId& id : f.cases) {
      ++tests;
      ++failed;
      cases << "  <testcase classname=\"reduce-verify.world" << f.world << "\" name=\""
            << xml_escape(format_case_id(id)) << "\"><failure message=\"" << xml_escape(f.what)
            << "\"/></testcase>\n";
    }
  }
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuite name=\"reduce-verify run\" tests=\"" << tests << "\" failures=\"" << failed
      << "\" skipped=\"" << skips << "\">\n"
      << cases.str() << "</testsuite>\n";
  return out.str();
}

}  // namespace

nlohmann::json build_report(const RunOptions& options, const std::vector<WorldResults>& worlds,
                            const std::vector<CaseResult>& skipped,
                            const std::vector<WorldFailure>& failures) {
  nlohmann::json fingerprint = nlohmann::json::object();
  // Held in a named object: ranging over host_fingerprint().fields() would iterate a
  // vector inside a temporary that has already been destroyed.
  const Fingerprint host = host_fingerprint();
  for (const auto& [key, value] : host.fields()) fingerprint[key] = value;
  // The transport facts of the box: library versions and the files they were loaded from,
  // GPUs, driver and runtime (what `info` prints).
  for (const auto& [key, value] : transport_facts()) fingerprint[key] = value;
  nlohmann::json world_list = nlohmann::json::array();
  nlohmann::json results = nlohmann::json::array();
  for (const WorldResults& w : worlds) {
    world_list.push_back(w.world);
    fingerprint["transport"] = w.transport;
    fingerprint["transport library"] = w.transport_library;
    fingerprint["device"] = w.device;
    for (const CaseResult& r : w.results) results.push_back(to_json(r));
    if (!w.inputs_line.empty()) {
      // An --inputs result is named by its inputs (the label `digest --inputs` prints), so
      // `compare` lines up two boxes' runs over the same files.
      results.back()["case"] = w.inputs_line.substr(w.inputs_line.find("  ") + 2);
      results.back()["inputs"] = w.inputs_line;
    }
  }
  for (const CaseResult& r : skipped) results.push_back(to_json(r));
  nlohmann::json failure_list = nlohmann::json::array();
  for (const WorldFailure& f : failures) {
    failure_list.push_back({{"world", f.world}, {"what", f.what}, {"cases", f.cases.size()}});
  }
  return {{"format", "reduce-verify run report 1"},
          {"fingerprint", fingerprint},
          {"contract", to_string(options.contract)},
          {"iterations", options.iters},
          {"worlds", world_list},
          {"results", results},
          {"world_failures", failure_list}};
}

int finish_run(const RunOptions& options, const std::vector<WorldResults>& worlds,
               const std::vector<CaseResult>& skipped, const std::vector<WorldFailure>& failures) {
  std::size_t passed = 0, failed = 0, differs = 0;
  for (const WorldResults& w : worlds) {
    for (const CaseResult& r : w.results) {
      if (!w.inputs_line.empty()) {
        // --inputs: the line `digest` prints, then the verdict.
        std::cout << w.inputs_line << "\n";
        if (r.verdict != Verdict::kOk) std::cerr << "run --inputs: FAILED: " << r.detail << "\n";
      } else {
        std::cout << result_line(r) << "\n";
      }
      if (r.verdict == Verdict::kFailed)
        ++failed;
      else
        ++passed;
      if (r.verdict == Verdict::kDiffers) ++differs;
    }
  }
  print_skipped(skipped);
  int exit_code = kExitVerified;
  for (const WorldFailure& f : failures) {
    std::cerr << "reduce-verify: world of " << f.world << " ranks failed: " << f.what << "\n";
    failed += std::max<std::size_t>(1, f.cases.size());  // an --inputs world has no case ids
    exit_code = std::max(exit_code, f.exit_code);
  }
  if (differs) {
    std::cout << differs
              << " library-sum results differ from fixed-order (reported, not failures)\n";
  }
  std::cout << passed << " passed, " << failed << " failed";
  if (!skipped.empty()) std::cout << ", " << skipped.size() << " skipped";
  std::cout << "\n";
  std::cout.flush();
  if (!options.report_path.empty()) {
    write_text(options.report_path,
               build_report(options, worlds, skipped, failures).dump(1) + "\n");
  }
  if (!options.junit_path.empty()) write_text(options.junit_path, junit(worlds, skipped, failures));
  if (exit_code != kExitVerified) return exit_code;
  if (failed > 0) return kExitVerificationFailed;
  if (passed == 0) {
    std::cerr << "reduce-verify: nothing was verified\n";
    return kExitBadInput;
  }
  return kExitVerified;
}

}  // namespace rv
