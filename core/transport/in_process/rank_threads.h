// Ranks as threads of one process, in the manner of Gloo's own base_test.h: W threads, one
// per rank, that stay up between steps (the tests and the benchmarks run worlds on them).
// run(step) releases them together and waits for all of them, so a test runs collective code
// on every rank at once and a benchmark times only the step (threads of one process share the
// cores exactly as W processes on this box would).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rv::in_process {

// What one rank's thread ended a step with: the exception it threw (null if none) and how
// long its step ran.
struct RankOutcome {
  std::exception_ptr error;
  double seconds = 0;
};

struct StepOutcome {
  std::vector<RankOutcome> ranks;  // in rank order
  double seconds = 0;              // from the release of the threads to the end of the last
};

class RankThreads {
 public:
  explicit RankThreads(std::uint32_t world);
  ~RankThreads();  // joins the threads (a step must not be running)
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  std::uint32_t world() const { return static_cast<std::uint32_t>(threads_.size()); }
  // Runs step(rank) on every rank thread at once and waits for all of them. A rank's
  // exception is caught and reported in its outcome; the other ranks run on.
  StepOutcome run(const std::function<void(std::uint32_t rank)>& step);

 private:
  void serve(std::uint32_t rank);

  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable cv_;
  const std::function<void(std::uint32_t)>* step_ = nullptr;
  std::vector<RankOutcome> outcomes_;
  std::uint64_t generation_ = 0;
  std::size_t running_ = 0;
  bool stopping_ = false;
};

// Throws the first rank error (with its rank) as a std::runtime_error, for tests and
// benchmarks where no rank may fail.
void expect_no_errors(const std::vector<RankOutcome>& outcomes);

// The message of an exception; "" for a null pointer.
std::string error_text(const std::exception_ptr& error);

template <typename E>
bool is_error(const std::exception_ptr& error) {
  if (!error) return false;
  try {
    std::rethrow_exception(error);
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
}

// A one-shot latch: count_down() by `count` threads releases wait().
class Latch {
 public:
  explicit Latch(std::size_t count) : count_(count) {}
  void count_down();
  void wait();

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::size_t count_;
};

}  // namespace rv::in_process
