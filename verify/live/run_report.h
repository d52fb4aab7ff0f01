// The end of a run: one line per result on stdout, the closing `N passed, N failed` line,
// the JSON report (--report) and the JUnit file (--junit), and the exit code.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "verify/live/run_plan.h"
#include "verify/live/run_results.h"

namespace rv {

// A world that could not finish (a rank died, a deadline passed): its cases count as failed
// and the run's exit code is at least `exit_code`.
struct WorldFailure {
  std::uint32_t world = 0;
  std::string what;
  int exit_code = 3;
  std::vector<CaseId> cases;  // the fixed-order ids of the cases it did not finish
};

int finish_run(const RunOptions& options, const std::vector<WorldResults>& worlds,
               const std::vector<CaseResult>& skipped,
               const std::vector<WorldFailure>& failures = {});

// The report: fingerprint, transport, worlds, every result with per-rank digests.
nlohmann::json build_report(const RunOptions& options, const std::vector<WorldResults>& worlds,
                            const std::vector<CaseResult>& skipped,
                            const std::vector<WorldFailure>& failures);

}  // namespace rv
