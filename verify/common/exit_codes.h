// The exit codes of docs/DESIGN.md §6, and the one place that maps error classes onto them.
#pragma once

namespace rv {

enum ExitCode : int {
  kExitVerified = 0,            // everything verified
  kExitVerificationFailed = 1,  // a mismatch, a rank disagreement
  kExitBadInput = 2,            // bad usage or bad input (named: file, line, what is wrong)
  kExitRuntimeFailure = 3,      // peer died, deadline, rendezvous, device
};

// Call inside a catch block: prints the in-flight exception as one line on stderr and
// returns its exit code.
int report_current_exception();

}  // namespace rv
