#include "tests/transport/thread_world.h"

#include <gloo/rendezvous/hash_store.h>

#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/transport/gloo/gloo_transport.h"

namespace rv::test {

std::vector<RankOutcome> run_threads(
    std::uint32_t world,
    const std::function<void(std::uint32_t, std::shared_ptr<gloo::rendezvous::Store>)>& body) {
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  std::vector<RankOutcome> outcomes(world);
  std::vector<std::thread> threads;
  for (std::uint32_t rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      const auto start = std::chrono::steady_clock::now();
      try {
        body(rank, store);
      } catch (...) {
        outcomes[rank].error = std::current_exception();
      }
      outcomes[rank].seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

std::vector<RankOutcome> run_ranks(std::uint32_t world,
                                   const std::function<void(std::uint32_t, Transport&)>& body,
                                   std::chrono::milliseconds timeout) {
  return run_threads(world,
                     [&](std::uint32_t rank, std::shared_ptr<gloo::rendezvous::Store> store) {
                       GlooConnectOptions options;
                       options.rank = rank;
                       options.world = world;
                       options.timeout = timeout;
                       auto transport = connect_gloo_with_store(std::move(store), options);
                       // The body's time starts after the rendezvous: timing tests measure the
                       // operation.
                       body(rank, *transport);
                     });
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

std::optional<std::size_t> first_bit_difference(const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (std::memcmp(a + i, b + i, sizeof(float)) != 0) return i;
  }
  return std::nullopt;
}

std::string describe_difference(const float* expected, const float* actual, std::size_t i) {
  std::uint32_t e = 0, a = 0;
  std::memcpy(&e, expected + i, sizeof e);
  std::memcpy(&a, actual + i, sizeof a);
  std::ostringstream out;
  out << "element " << i << ": expected 0x" << std::hex << e << " got 0x" << a;
  return out.str();
}

void Latch::count_down() {
  std::lock_guard<std::mutex> lock(m_);
  if (count_ > 0 && --count_ == 0) cv_.notify_all();
}

void Latch::wait() {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return count_ == 0; });
}

}  // namespace rv::test
