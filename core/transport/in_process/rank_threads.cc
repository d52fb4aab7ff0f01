#include "core/transport/in_process/rank_threads.h"

#include <stdexcept>

namespace rv::in_process {

RankThreads::RankThreads(std::uint32_t world) {
  for (std::uint32_t r = 0; r < world; ++r) threads_.emplace_back([this, r] { serve(r); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

StepOutcome RankThreads::run(const std::function<void(std::uint32_t)>& step) {
  std::unique_lock<std::mutex> lock(m_);
  step_ = &step;
  outcomes_.assign(threads_.size(), RankOutcome{});
  running_ = threads_.size();
  const auto start = std::chrono::steady_clock::now();
  ++generation_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return running_ == 0; });
  const auto end = std::chrono::steady_clock::now();
  step_ = nullptr;
  return {std::move(outcomes_), std::chrono::duration<double>(end - start).count()};
}

void RankThreads::serve(std::uint32_t rank) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(std::uint32_t)>* step = nullptr;
    {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      step = step_;
    }
    RankOutcome outcome;
    const auto start = std::chrono::steady_clock::now();
    try {
      (*step)(rank);
    } catch (...) {
      outcome.error = std::current_exception();
    }
    outcome.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(m_);
    outcomes_[rank] = std::move(outcome);
    if (--running_ == 0) cv_.notify_all();
  }
}

void expect_no_errors(const std::vector<RankOutcome>& outcomes) {
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    if (outcomes[r].error) {
      throw std::runtime_error("rank " + std::to_string(r) +
                               " failed: " + error_text(outcomes[r].error));
    }
  }
}

std::string error_text(const std::exception_ptr& error) {
  if (!error) return "";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

void Latch::count_down() {
  std::lock_guard<std::mutex> lock(m_);
  if (count_ > 0 && --count_ == 0) cv_.notify_all();
}

void Latch::wait() {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return count_ == 0; });
}

}  // namespace rv::in_process
