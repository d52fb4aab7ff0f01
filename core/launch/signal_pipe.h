// The supervisor's signals, while one world of rank processes runs: SIGCHLD (a rank ended),
// SIGINT and SIGTERM (stop the world) each wake the supervisor's wait through a self-pipe (a
// signal arriving just before the wait leaves a byte, so no wake-up is lost), and SIGINT and
// SIGTERM are also counted as requests to stop. Handlers are process-wide, so one SignalPipe
// may exist at a time; the caller's handlers come back when it is destroyed.
#pragma once

#include <signal.h>

#include <chrono>
#include <iterator>

namespace rv::launch_detail {

// The signals a SignalPipe handles; a rank process resets them to their defaults before it
// runs its program.
inline constexpr int kSupervisorSignals[] = {SIGCHLD, SIGINT, SIGTERM};

class SignalPipe {
 public:
  // Throws InternalError when another SignalPipe is active, RuntimeFailure when the pipe
  // cannot be made.
  SignalPipe();
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  // Waits for a signal (or until `timeout`, at least 1 ms), then empties the pipe.
  void wait(std::chrono::milliseconds timeout) const;
  // The first SIGINT or SIGTERM received (0 when none), and how many of them came.
  int stop_signal() const;
  int stop_requests() const;

 private:
  struct sigaction previous_[std::size(kSupervisorSignals)];
};

}  // namespace rv::launch_detail
