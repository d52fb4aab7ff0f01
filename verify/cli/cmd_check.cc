// reduce-verify check FILE...: like `xxh128sum -c`. Each line's digest is re-derived from its
// case id alone; `id: OK` or `id: FAILED`, closing counts, --quiet, --status, --strict.
// Parsing, verifying and reporting are separate steps.
#include <algorithm>
#include <iostream>
#include <memory>

#include "core/digest/digest.h"
#include "core/error.h"
#include "core/fp_environment.h"
#include "verify/cli/commands.h"
#include "verify/golden/case_matrix.h"
#include "verify/cli/parallel.h"
#include "verify/common/exit_codes.h"
#include "verify/common/progress.h"
#include "verify/golden/golden_file.h"

namespace rv {
namespace {

struct CheckOptions {
  std::vector<std::string> files;
  bool quiet = false;   // no OK lines
  bool status = false;  // nothing on stdout: the exit code says it all
  bool strict = false;  // improperly formatted lines make the run fail (exit 2)
  unsigned threads = 0;
  std::vector<std::string> dtypes;  // --dtype: verify only the lines of these (empty: all)
  std::string coll;                 // --coll: verify only the lines of this collective
};

struct FileReport {
  GoldenFile file;
  bool unreadable = false;
  std::size_t failed = 0;
};

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

int run_check(const CheckOptions& options) {
  enforce_ieee_fp_environment();
  // 1. Parse.
  std::vector<FileReport> reports;
  for (const std::string& path : options.files) {
    FileReport report;
    try {
      report.file = read_golden_file(path);
    } catch (const InputError& error) {
      std::cerr << "reduce-verify: " << error.what() << "\n";
      report.file.path = path;
      report.unreadable = true;
    }
    // A library-sum case has no portable bits, so no golden line can name one.
    auto& entries = report.file.entries;
    for (auto it = entries.begin(); it != entries.end();) {
      if (it->id.contract == Contract::kLibrarySum) {
        report.file.malformed.push_back(
            {it->line, "contract library-sum has no golden digest (no portable bits)"});
        it = entries.erase(it);
      } else if (!options.dtypes.empty() &&
                 std::find(options.dtypes.begin(), options.dtypes.end(),
                           std::string(to_string(it->id.dtype))) == options.dtypes.end()) {
        it = entries.erase(it);  // not selected: neither verified nor counted
      } else if (!options.coll.empty() && to_string(it->id.coll) != options.coll) {
        it = entries.erase(it);
      } else {
        ++it;
      }
    }
    reports.push_back(std::move(report));
  }

  // 2. Verify.
  struct Work {
    const GoldenEntry* entry;
    Digest computed;
  };
  std::vector<Work> work;
  for (const FileReport& report : reports) {
    for (const GoldenEntry& entry : report.file.entries) work.push_back({&entry, {}});
  }
  {
    Progress progress("check", work.size());
    parallel_for(work.size(), options.threads, [&](std::size_t i) {
      work[i].computed = digest_case(work[i].entry->id);
      progress.advance();
    });
  }

  // 3. Report.
  std::size_t passed = 0;
  std::size_t failed = 0;
  std::size_t malformed = 0;
  bool unreadable = false;
  std::size_t next = 0;
  for (FileReport& report : reports) {
    unreadable = unreadable || report.unreadable;
    for (const MalformedLine& line : report.file.malformed) {
      std::cerr << report.file.path << ":" << line.line << ": improperly formatted: " << line.reason
                << "\n";
    }
    for (const GoldenEntry& entry : report.file.entries) {
      const Work& done = work[next++];
      const bool ok = done.computed == entry.digest;
      if (ok) {
        ++passed;
        if (!options.quiet && !options.status) std::cout << format_case_id(entry.id) << ": OK\n";
      } else {
        ++failed;
        ++report.failed;
        if (!options.status) std::cout << format_case_id(entry.id) << ": FAILED\n";
        std::cerr << report.file.path << ":" << entry.line << ": expected " << entry.digest.hex()
                  << ", computed " << done.computed.hex() << "\n";
      }
    }
    malformed += report.file.malformed.size();
    if (report.failed) {
      std::cerr << "reduce-verify: WARNING: " << report.file.path << ": "
                << plural(report.failed, "computed digest did NOT match",
                          "computed digests did NOT match")
                << "\n";
    }
    if (!report.file.malformed.empty()) {
      std::cerr << "reduce-verify: WARNING: " << report.file.path << ": "
                << plural(report.file.malformed.size(), "line is improperly formatted",
                          "lines are improperly formatted")
                << "\n";
    }
    if (!report.unreadable && report.file.entries.empty()) {
      std::cerr << "reduce-verify: " << report.file.path
                << ": no properly formatted golden lines found\n";
    }
  }
  if (!options.status) std::cout << passed << " passed, " << failed << " failed\n";

  if (failed > 0) return kExitVerificationFailed;
  if (unreadable || passed == 0 || (options.strict && malformed > 0)) return kExitBadInput;
  return kExitVerified;
}

}  // namespace

void setup_check(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "Verify golden files: re-derive every line's digest from its case id alone. "
      "Exit 0 only if at least one line verified and none failed.");
  cmd->add_option("files", options->files, "golden files (lines '<digest>  <case-id>')")
      ->required();
  cmd->add_flag("-q,--quiet", options->quiet, "do not print OK lines");
  cmd->add_flag("--status", options->status, "print nothing on stdout; the exit code tells");
  cmd->add_flag("--strict", options->strict, "exit 2 if any line is improperly formatted");
  cmd->add_option("--threads", options->threads, "worker threads (default: one per core)");
  add_dtype_option(*cmd, options->dtypes,
                   "verify only the lines of these dtypes, e.g. bf16,f16 (default: all)");
  cmd->add_option("--coll", options->coll,
                  "verify only the lines of this collective: all-reduce or reduce-scatter "
                  "(default: all)")
      ->check(CLI::IsMember({"all-reduce", "reduce-scatter"}));
  cmd->callback([options, &exit_code] { exit_code = run_check(*options); });
}

}  // namespace rv
