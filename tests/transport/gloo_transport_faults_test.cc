// The Gloo transport when a peer fails, thread per rank over loopback: a rank that never
// posts (frozen) and one that goes away (killed) are named within the deadline; the
// rendezvous names the ranks that never arrive (in-process store and FileStore), refuses a
// reused store directory and bad options, and a closed peer socket cannot SIGPIPE a survivor.
#include "core/transport/gloo/gloo_transport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "core/error.h"
#include "tests/support/scratch_dir.h"
#include "tests/thread_world/gloo_world.h"

namespace rv::test {
namespace {
// A frozen peer (SIGSTOP) looks like this to the others: connected, silent.
TEST(GlooTransportFaults, RankThatNeverPostsIsNamedWithinTheDeadline) {
  constexpr std::uint32_t kWorld = 3;
  Latch others_done(kWorld - 1);
  auto outcomes = run_ranks(
      kWorld,
      [&](std::uint32_t me, Transport& t) {
        if (me == 2) {
          others_done.wait();  // stays connected and silent until the others gave up
          return;
        }
        std::vector<float> values(1000, 1.0f), gathered(kWorld * 1000);
        try {
          t.all_gather(values.data(), gathered.data(), values.size() * sizeof(float));
        } catch (...) {
          others_done.count_down();
          throw;
        }
        others_done.count_down();
      },
      1000ms);
  for (std::uint32_t r = 0; r < 2; ++r) {
    const std::string text = error_text(outcomes[r].error);
    ASSERT_TRUE(is_error<DeadlineExceeded>(outcomes[r].error)) << r << ": " << text;
    EXPECT_NE(text.find("rank 2: no data within 1 s (peer dead or frozen?)"), std::string::npos)
        << text;
    EXPECT_GE(outcomes[r].seconds, 0.9);
    EXPECT_LT(outcomes[r].seconds, 1.0 + 2.0) << "named after the timeout plus 2 s";
  }
}

// A killed peer looks like this: its sockets close.
TEST(GlooTransportFaults, RankThatGoesAwayIsNamedPromptly) {
  constexpr std::uint32_t kWorld = 3;
  auto outcomes = run_ranks(
      kWorld,
      [&](std::uint32_t me, Transport& t) {
        if (me == 2) return;  // its transport is destroyed: connections closed
        std::this_thread::sleep_for(100ms);
        std::vector<float> values(100000, 1.0f), gathered(kWorld * values.size());
        t.all_gather(values.data(), gathered.data(), values.size() * sizeof(float));
      },
      10000ms);
  for (std::uint32_t r = 0; r < 2; ++r) {
    const std::string text = error_text(outcomes[r].error);
    ASSERT_TRUE(is_error<RuntimeFailure>(outcomes[r].error)) << r << ": " << text;
    EXPECT_FALSE(is_error<DeadlineExceeded>(outcomes[r].error)) << text;
    EXPECT_NE(text.find("rank 2: connection lost"), std::string::npos) << text;
    EXPECT_LT(outcomes[r].seconds, 5.0) << "a closed connection must not wait for the deadline";
  }
}

TEST(GlooTransportFaults, RankThatNeverPostsLibrarySumIsNamed) {
  Latch others_done(1);
  auto outcomes = run_ranks(
      2,
      [&](std::uint32_t me, Transport& t) {
        if (me == 1) {
          others_done.wait();
          return;
        }
        std::vector<float> values(1000, 1.0f);
        try {
          t.library_sum(values.data(), values.size());
        } catch (...) {
          others_done.count_down();
          throw;
        }
      },
      1000ms);
  ASSERT_TRUE(is_error<DeadlineExceeded>(outcomes[0].error)) << error_text(outcomes[0].error);
  EXPECT_NE(error_text(outcomes[0].error).find("rank 1: no data within 1 s"), std::string::npos)
      << error_text(outcomes[0].error);
  EXPECT_LT(outcomes[0].seconds, 3.0);
}

TEST(GlooTransportRendezvous, RanksThatNeverArriveAreNamed) {
  constexpr std::uint32_t kWorld = 4;
  auto outcomes = run_threads(kWorld, [&](std::uint32_t me, auto store) {
    if (me >= 2) return;  // ranks 2 and 3 never come
    GlooConnectOptions options;
    options.rank = me;
    options.world = kWorld;
    options.timeout = 1000ms;
    connect_gloo_with_store(store, options);
  });
  for (std::uint32_t r = 0; r < 2; ++r) {
    const std::string text = error_text(outcomes[r].error);
    ASSERT_TRUE(is_error<DeadlineExceeded>(outcomes[r].error)) << text;
    EXPECT_NE(text.find("ranks 2, 3 did not arrive within 1 s"), std::string::npos) << text;
    EXPECT_LT(outcomes[r].seconds, 3.0);
  }
}

TEST(GlooTransportRendezvous, FileStoreWorldConnectsAndMovesBytes) {
  ScratchDir dir;
  constexpr std::uint32_t kWorld = 3;
  auto outcomes = run_threads(kWorld, [&](std::uint32_t me, auto) {
    GlooConnectOptions options;
    options.store_dir = dir.path();
    options.rank = me;
    options.world = kWorld;
    options.timeout = 10000ms;
    auto t = connect_gloo(options);
    std::int64_t value = me;
    EXPECT_EQ(t->max_int(value), 2);
  });
  expect_no_errors(outcomes);
}

TEST(GlooTransportRendezvous, FileStoreNamesTheMissingRankOnTime) {
  ScratchDir dir;
  GlooConnectOptions options;
  options.store_dir = dir.path();
  options.rank = 0;
  options.world = 2;
  options.timeout = 1000ms;
  const auto start = std::chrono::steady_clock::now();
  try {
    connect_gloo(options);
    FAIL() << "connected without rank 1";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 did not arrive within 1 s"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(dir.path()), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);
}

TEST(GlooTransportRendezvous, AReusedStoreDirectoryIsRefused) {
  ScratchDir dir;
  GlooConnectOptions options;
  options.store_dir = dir.path();
  options.timeout = 1000ms;
  connect_gloo(options);  // a world of one, leaving its keys behind
  try {
    connect_gloo(options);
    FAIL() << "connected over a stale store";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("stale or reused job directory"), std::string::npos)
        << e.what();
  }
}

TEST(GlooTransportRendezvous, BadOptionsAreRefused) {
  GlooConnectOptions options;
  options.store_dir = "/nonexistent/reduce-verify-store";
  EXPECT_THROW(connect_gloo(options), RuntimeFailure);
  ScratchDir dir;
  options.store_dir = dir.path();
  options.rank = 2;
  options.world = 2;
  EXPECT_THROW(connect_gloo(options), InputError);
  options.rank = 0;
  options.timeout = 0ms;
  EXPECT_THROW(connect_gloo(options), InputError);
}

TEST(GlooTransportRendezvous, SigpipeCannotKillASurvivor) {
  auto outcomes = run_ranks(1, [](std::uint32_t, Transport&) {});
  expect_no_errors(outcomes);
  struct sigaction current {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &current), 0);
  EXPECT_EQ(current.sa_handler, SIG_IGN);
}

}  // namespace
}  // namespace rv::test
