#include "verify/common/progress.h"

#include <unistd.h>

#include <cstdio>

namespace rv {

Progress::Progress(std::string what, std::size_t total)
    : what_(std::move(what)), total_(total), enabled_(::isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
  if (enabled_) std::fprintf(stderr, "\r\033[K");
}

void Progress::advance() {
  const std::size_t done = ++done_;
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (done != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  std::fprintf(stderr, "\r\033[K%s %zu/%zu", what_.c_str(), done, total_);
  std::fflush(stderr);
}

}  // namespace rv
