// Waiting with a deadline, the one way the library does it. Every blocking wait has a
// deadline, so a dead or frozen peer is an error that names it, never a hang. A wait that
// polls (files in a job directory, a Gloo store's keys, NCCL's asynchronous state, the NCCL
// id file) fixes a Deadline when it starts, sleeps between polls with a Backoff, and words its
// timeout message with format_duration and ranks_text.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace rv {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // `timeout` from now.
  explicit Deadline(std::chrono::milliseconds timeout);

  // The limit it was set with: what a timeout message names.
  std::chrono::milliseconds timeout() const { return timeout_; }
  // The same deadline moved later by `grace`; timeout() still names the original limit.
  Deadline extended(std::chrono::milliseconds grace) const;
  bool passed() const { return Clock::now() >= at_; }
  // When it passes.
  Clock::time_point at() const { return at_; }
  // What is left, never negative (Gloo reads -1 ms as "use the context default").
  std::chrono::milliseconds remaining() const;
  // Since the deadline was set.
  std::chrono::milliseconds elapsed() const;

 private:
  std::chrono::milliseconds timeout_;
  Clock::time_point start_, at_;
};

// The sleep between two polls of a wait: it starts at `first`, so a wait whose condition comes
// at once costs microseconds, and doubles up to `cap`, so a wait of seconds costs little CPU
// on a box whose cores the ranks share.
class Backoff {
 public:
  // 50 µs doubling up to 5 ms: ranks that arrive together pass in well under a millisecond,
  // and a wait of seconds polls 200 times a second.
  Backoff() : Backoff(std::chrono::microseconds(50), std::chrono::milliseconds(5)) {}
  Backoff(std::chrono::microseconds first, std::chrono::microseconds cap);
  // Sleeps for the next interval, but never past `deadline`.
  void sleep(const Deadline& deadline);

 private:
  std::chrono::microseconds interval_, cap_;
};

// A duration in messages: seconds to the millisecond, trailing zeros dropped ("10 s",
// "0.25 s", "1.5 s").
std::string format_duration(std::chrono::milliseconds duration);

// The ranks a wait is missing: "rank 2", "ranks 2, 5".
std::string ranks_text(const std::vector<std::uint32_t>& ranks);

}  // namespace rv
