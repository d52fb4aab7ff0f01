// Waiting on a shared directory: a deadline, a poll interval that starts short (ranks that
// arrive together pass in well under a millisecond) and backs off (a wait of seconds costs
// little CPU on a box whose cores the ranks share), and the wording of timeout messages.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace rv {

class PollDeadline {
 public:
  explicit PollDeadline(std::chrono::milliseconds timeout);
  bool passed() const;
  // Sleeps for the next poll interval (50 µs doubling up to 5 ms), never past the deadline.
  void sleep();

 private:
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::microseconds interval_{50};
};

// "10 s", "0.25 s", "1.5 s"
std::string seconds_text(std::chrono::milliseconds duration);

// "rank 2", "ranks 2, 5"
std::string ranks_text(const std::vector<std::uint32_t>& ranks);

}  // namespace rv
