// A rank process started in the background (inside a namespace host, through `ip netns
// exec`), watched without blocking so a test can time when each rank of a world ends.
// Output goes to files; a process still running when its object dies is killed and reaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace rv::test {

class RankProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // Spawns argv[0] (a full path) with `env` ("KEY=VALUE") added to ours; stdout and stderr
  // go to out_prefix.out and out_prefix.err. Throws std::runtime_error when it cannot spawn.
  RankProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
              const std::string& out_prefix);
  ~RankProcess();
  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reaps the process if it has ended (never blocks); true once it has.
  bool poll();
  bool ended() const { return reaped_; }
  int exit_code() const { return exit_code_; }  // -1 when a signal ended it
  int signal() const { return signal_; }
  Clock::time_point ended_at() const { return ended_at_; }
  std::string out() const;
  std::string err() const;
  std::string describe() const;  // "exit 3", "signal 9", "running"

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
  int signal_ = 0;
  Clock::time_point ended_at_{};
  std::string prefix_;
};

using RankProcesses = std::vector<std::unique_ptr<RankProcess>>;

// Polls every process until all have ended or `limit` has passed; true when all ended.
bool wait_for_all(RankProcesses& ranks, std::chrono::milliseconds limit);

}  // namespace rv::test
