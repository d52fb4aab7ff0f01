// A progress line on stderr for long work, drawn only when stderr is a terminal (CI logs
// and pipes stay clean).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace rv {

class Progress {
 public:
  Progress(std::string what, std::size_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void advance();  // thread-safe

 private:
  std::string what_;
  std::size_t total_;
  std::atomic<std::size_t> done_{0};
  bool enabled_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace rv
