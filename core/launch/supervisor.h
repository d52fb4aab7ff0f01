// Self-spawn: a process that has no rank in its environment and is asked for a world of
// W > 1 becomes the supervisor. It starts W rank processes as its direct children (the same
// program and arguments, the rank contract of launcher_env.h in their environment), waits
// for them, and on the first child that fails stops all the others, so a world either
// finishes or is gone, with the report of which rank failed and how.
//
// No orphan is ever left behind:
// - each child asks the kernel for SIGKILL when the supervisor's thread dies
//   (PR_SET_PDEATHSIG), and checks getppid() right after, in case the supervisor died
//   between fork and prctl;
// - SIGINT and SIGTERM sent to the supervisor are forwarded to the children, which are then
//   stopped like after a failure;
// - every child is reaped before run_rank_processes returns, and only pids still unreaped are
//   ever signalled, so a signal can never hit a recycled pid.
// run_rank_processes takes over SIGCHLD, SIGINT and SIGTERM while it runs (restoring the
// previous handlers afterwards) and is not reentrant: one world at a time per process. A run
// of several worlds holds one StopSignals for all of them instead, so that a SIGINT or SIGTERM
// that arrives during one world (or between two) stops the run, not only the current world.
// PR_SET_PDEATHSIG fires when the calling *thread* ends; the call blocks that thread until the
// world is reaped, so this holds.
// The pieces: signal_pipe.h (the handlers and their self-pipe), child_process.h (fork and exec
// of one rank); the world's state machine is in supervisor.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rv {

struct RankProcessSpec {
  // argv[0] = the program (a path; without a '/', it is looked up in PATH); the same
  // arguments for every rank.
  std::vector<std::string> argv;
  std::uint32_t world = 1;
  // Added to each child's environment (replacing a variable of the same name); the rest of
  // the parent's environment passes through unchanged (NCCL_*, CUDA_VISIBLE_DEVICES, ...
  // must reach the ranks). REDUCE_VERIFY_RANK/_WORLD_SIZE/_LOCAL_RANK are set last.
  std::vector<std::pair<std::string, std::string>> env;
  // After the first failure (or a forwarded signal, or the deadline): SIGTERM (and SIGCONT,
  // so a stopped rank acts on it) to the rest, SIGKILL to whoever is left after grace.
  std::chrono::milliseconds grace{2000};
  // 0 = none; else the whole world is stopped as above when it passes.
  std::chrono::milliseconds deadline{0};
};

struct RankExit {
  std::uint32_t rank = 0;
  std::int64_t pid = 0;
  bool exited = false;  // true: exit code in `code`; false: killed by `signal`
  int code = 0;
  int signal = 0;
  // The supervisor had signalled it before it ended, and it did not die of another signal.
  bool killed_by_us = false;
  std::chrono::milliseconds elapsed{0};  // from the start of the world to this rank's end
  bool ok() const { return exited && code == 0; }
};

struct WorldOutcome {
  std::vector<RankExit> exits;  // one per rank, in rank order
  // The first child that exited non-zero or by a signal that the supervisor had not sent.
  std::optional<RankExit> first_failure;
  bool deadline_passed = false;
  int forwarded_signal = 0;  // SIGINT or SIGTERM received by the supervisor, else 0
  // From the first failure (or signal, or deadline) until the last child was reaped.
  std::chrono::milliseconds stop_time{0};

  // Every rank exited 0, and no deadline or signal stopped the world.
  bool ok() const;
  // e.g. "rank 2 was killed by signal 9 (SIGKILL); ranks 0, 1, 3 stopped by the supervisor",
  // "rank 1 exited with code 3; rank 0 exited with code 3; rank 2 stopped by the supervisor",
  // "the deadline of 30 s passed; ranks 0, 1 stopped by the supervisor", "all 4 ranks exited 0"
  std::string describe() const;
};

namespace launch_detail {
class SignalPipe;
}

// SIGCHLD, SIGINT and SIGTERM taken over for as long as it lives (the previous handlers come
// back when it is destroyed); one at a time per process. A stop signal is remembered: every
// world run under it after that is stopped as soon as it starts.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first SIGINT or SIGTERM received so far, else 0.
  int stop_signal() const;
  const launch_detail::SignalPipe& pipe() const { return *pipe_; }

 private:
  std::unique_ptr<launch_detail::SignalPipe> pipe_;
};

// As run_rank_processes, under the caller's StopSignals.
WorldOutcome run_rank_processes(const RankProcessSpec& spec, const StopSignals& signals);

// Starts spec.world rank processes and waits for all of them. Each child gets
// REDUCE_VERIFY_RANK=r, REDUCE_VERIFY_WORLD_SIZE=W, REDUCE_VERIFY_LOCAL_RANK=r. Throws
// InputError for an empty argv or a world of 0, RuntimeFailure when a rank cannot be started
// (fork or exec failed: the ranks already started are stopped and reaped first).
WorldOutcome run_rank_processes(const RankProcessSpec& spec);

// "SIGKILL" for 9, "signal 64" for one without a name.
std::string signal_name(int signal);

}  // namespace rv
