#include "core/deadline.h"

#include <algorithm>
#include <cstdio>
#include <thread>

namespace rv {

Deadline::Deadline(std::chrono::milliseconds timeout)
    : timeout_(timeout), start_(Clock::now()), at_(start_ + timeout) {}

Deadline Deadline::extended(std::chrono::milliseconds grace) const {
  Deadline later = *this;
  later.at_ += grace;
  return later;
}

std::chrono::milliseconds Deadline::remaining() const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

std::chrono::milliseconds Deadline::elapsed() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_);
}

Backoff::Backoff(std::chrono::microseconds first, std::chrono::microseconds cap)
    : interval_(first), cap_(cap) {}

void Backoff::sleep(const Deadline& deadline) {
  const auto now = Deadline::Clock::now();
  if (now >= deadline.at()) return;
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline.at() - now);
  std::this_thread::sleep_for(std::min(interval_, left));
  interval_ = std::min(interval_ * 2, cap_);
}

std::string format_duration(std::chrono::milliseconds duration) {
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
