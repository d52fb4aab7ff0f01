// A rank process started in the background, for the fault tests: they need its pid (to kill
// or stop it mid-run) while it runs. Output goes to files in a scratch directory.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace rv::test {

class LiveProcess {
 public:
  // Spawns argv with `env` ("KEY=VALUE") added to ours; stdout/stderr to out_prefix.{out,err}.
  LiveProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
              const std::string& out_prefix);
  ~LiveProcess();  // kills and reaps a process still running
  LiveProcess(const LiveProcess&) = delete;
  LiveProcess& operator=(const LiveProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Waits up to `limit`; true when it ended. Then exit_code() (-1 for a signal) and signal().
  bool wait(std::chrono::milliseconds limit);
  int exit_code() const { return exit_code_; }
  int signal() const { return signal_; }
  std::string out() const;
  std::string err() const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
  int signal_ = 0;
  std::string prefix_;
};

// The direct children of a process (from /proc), for finding a supervisor's ranks.
std::vector<pid_t> children_of(pid_t parent);

// True while any process runs whose command line contains `marker` (orphan check).
bool any_process_with(const std::string& marker);

}  // namespace rv::test
