#include "core/launch/polling.h"

#include <algorithm>
#include <cstdio>
#include <thread>

namespace rv {

PollDeadline::PollDeadline(std::chrono::milliseconds timeout)
    : deadline_(std::chrono::steady_clock::now() + timeout) {}

bool PollDeadline::passed() const { return std::chrono::steady_clock::now() >= deadline_; }

void PollDeadline::sleep() {
  const auto now = std::chrono::steady_clock::now();
  if (now >= deadline_) return;
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline_ - now);
  std::this_thread::sleep_for(std::min(interval_, left));
  interval_ = std::min(interval_ * 2, std::chrono::microseconds(5000));
}

std::string seconds_text(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(duration.count()) / 1000.0);
  std::string s(text);
  // Trim trailing zeros of the fraction: "10.000" -> "10", "0.250" -> "0.25".
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s + " s";
}

std::string ranks_text(const std::vector<std::uint32_t>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(ranks[i]);
  }
  return text;
}

}  // namespace rv
