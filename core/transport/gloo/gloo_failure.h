// Small pieces shared by the Gloo backend's files: the per-operation deadline, how durations
// read in messages, and the text of whatever Gloo threw (gloo::Exception, the I/O errors,
// and gloo::EnforceNotMet, its failed checks, are unrelated classes: both must be caught).
#pragma once

#include <chrono>
#include <string>

namespace rv {
namespace gloo_detail {

using Clock = std::chrono::steady_clock;

// The deadline of one transport operation, fixed when the operation starts.
class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds timeout)
      : timeout_(timeout), at_(Clock::now() + timeout) {}
  std::chrono::milliseconds timeout() const { return timeout_; }
  // The same deadline moved later by `grace`; timeout() still names the operation's limit.
  Deadline extended(std::chrono::milliseconds grace) const {
    Deadline later = *this;
    later.at_ += grace;
    return later;
  }
  // What is left, never negative (Gloo treats -1 ms as "use the context default").
  std::chrono::milliseconds remaining() const;
  bool passed() const { return Clock::now() >= at_; }

 private:
  std::chrono::milliseconds timeout_;
  Clock::time_point at_;
};

// "10 s", "1.5 s", "250 ms".
std::string format_duration(std::chrono::milliseconds duration);

// The message of the exception being handled (gloo::EnforceNotMet, gloo::Exception, any
// std::exception); call only inside a catch block.
std::string current_exception_text();

}  // namespace gloo_detail
}  // namespace rv
