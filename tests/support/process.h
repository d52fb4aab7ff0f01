// Runs a real program (the `reduce-verify` binary, xxh128sum, a rank process) the way a user
// would, and captures what it did: exit status or signal, stdout, stderr. End-to-end tests
// assert on these, so a crash or a signal is a result to report, never a test-binary crash.
#pragma once

#include <string>
#include <vector>

namespace rv::test {

struct ProcessOptions {
  std::string stdin_text;              // written to the child's stdin, which is then closed
  std::vector<std::string> extra_env;  // "KEY=VALUE", added to (or replacing in) our environment
  double timeout_seconds = 300;        // the child is killed (SIGKILL) past this
};

struct ProcessResult {
  int exit_code = -1;   // the exit status when the child exited, else -1
  int term_signal = 0;  // the signal that ended the child, else 0
  bool timed_out = false;
  std::string out;     // all of its stdout
  std::string err;     // all of its stderr
  double seconds = 0;  // wall time from spawn to reaping

  bool exited() const { return term_signal == 0 && exit_code >= 0; }
  // "exit 2", "signal 11 (Segmentation fault)", "killed after the 300 s timeout"
  std::string describe() const;
};

// Spawns argv[0] (searched in PATH when it has no '/') with argv, stdout and stderr captured
// through pipes. Throws std::runtime_error only when the program cannot be spawned at all.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// The full path of a program found in PATH, or "" when there is none.
std::string find_program(const std::string& name);

// The lines of a text, without their newlines; a last line without a newline counts.
std::vector<std::string> split_lines(const std::string& text);

}  // namespace rv::test
