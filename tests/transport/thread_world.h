// Thread-per-rank worlds for the transport and reducer tests, in the manner of Gloo's own
// base_test.h: W threads in this process, each a rank with its own Gloo TCP device and
// context over loopback, meeting in one in-process HashStore.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/transport/transport.h"

namespace gloo {
namespace rendezvous {
class Store;
}  // namespace rendezvous
}  // namespace gloo

namespace rv::test {

using namespace std::chrono_literals;

// What one rank's thread ended with: the exception it threw (null if none) and how long its
// body ran.
struct RankOutcome {
  std::exception_ptr error;
  double seconds = 0;
};

// Runs body(rank, store) on W threads sharing one fresh HashStore; the body connects itself.
std::vector<RankOutcome> run_threads(
    std::uint32_t world,
    const std::function<void(std::uint32_t, std::shared_ptr<gloo::rendezvous::Store>)>& body);

// Connects every rank (connect_gloo_with_store with `timeout`), then runs body(rank,
// transport); the seconds count only the body.
std::vector<RankOutcome> run_ranks(std::uint32_t world,
                                   const std::function<void(std::uint32_t, Transport&)>& body,
                                   std::chrono::milliseconds timeout = 20s);

// Throws the first rank error (with its rank) as a std::runtime_error, for tests where no
// rank may fail.
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

// Where two float arrays first differ bit for bit, if they do.
std::optional<std::size_t> first_bit_difference(const float* a, const float* b, std::size_t n);
std::string describe_difference(const float* expected, const float* actual, std::size_t i);

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

}  // namespace rv::test
