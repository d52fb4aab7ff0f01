// The file barrier: no rank leaves generation g before every rank has arrived at it, over
// threads and over processes; a missing or dead rank becomes a DeadlineExceeded naming it,
// within the timeout and a little.
#include "core/rendezvous/file_barrier.h"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/support/scratch_dir.h"

namespace rv {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kTimeout{300};
constexpr milliseconds kSlack{500};

int count_generation_dirs(const std::string& dir) {
  int n = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* entry = ::readdir(d))
      n += std::string(entry->d_name).rfind("gen-", 0) == 0;
    ::closedir(d);
  }
  return n;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

TEST(FileBarrier, ThreadsNeverLeaveAGenerationEarly) {
  test::ScratchDir scratch;
  constexpr std::uint32_t kWorld = 4;
  constexpr int kGenerations = 40;
  std::vector<std::atomic<int>> arrived(kGenerations);
  std::atomic<int> early{0};
  std::vector<std::thread> ranks;
  for (std::uint32_t r = 0; r < kWorld; ++r) {
    ranks.emplace_back([&, r] {
      FileBarrier barrier(scratch.path(), r, kWorld, milliseconds(10000));
      for (int g = 0; g < kGenerations; ++g) {
        // Stagger the ranks so that a barrier that let anyone through early would show it.
        if ((g + static_cast<int>(r)) % 3 == 0) std::this_thread::sleep_for(milliseconds(2));
        arrived[g]++;
        barrier.wait();
        if (arrived[g].load() != static_cast<int>(kWorld)) early++;
      }
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_EQ(early.load(), 0);
  // Rank 0 prunes generation g-2 once g is complete: at most the last few remain.
  EXPECT_LE(count_generation_dirs(scratch.path()), 3);
  EXPECT_TRUE(exists(scratch.file("gen-" + std::to_string(kGenerations - 1))));
}

TEST(FileBarrier, SingleRankPassesAtOnce) {
  test::ScratchDir scratch;
  FileBarrier barrier(scratch.path(), 0, 1, kTimeout);
  const auto start = Clock::now();
  for (int g = 0; g < 10; ++g) barrier.wait();
  EXPECT_LT(Clock::now() - start, milliseconds(100));
  EXPECT_EQ(barrier.generation(), 10u);
}

TEST(FileBarrier, MissingRankIsNamedWithinTheTimeout) {
  test::ScratchDir scratch;
  // Ranks 0, 1, 3 of 5 arrive; 2 and 4 never do.
  std::vector<std::future<std::pair<std::string, milliseconds>>> waits;
  for (std::uint32_t r : {0u, 1u, 3u}) {
    waits.push_back(std::async(std::launch::async, [&, r] {
      FileBarrier barrier(scratch.path(), r, 5, kTimeout);
      const auto start = Clock::now();
      std::string message;
      try {
        barrier.wait();
      } catch (const DeadlineExceeded& e) {
        message = e.what();
      }
      return std::make_pair(message,
                            std::chrono::duration_cast<milliseconds>(Clock::now() - start));
    }));
  }
  for (auto& w : waits) {
    const auto [message, took] = w.get();
    EXPECT_EQ(message,
              "barrier generation 0 in " + scratch.path() + ": ranks 2, 4 missing after 0.3 s");
    EXPECT_GE(took, kTimeout);
    EXPECT_LT(took, kTimeout + kSlack);
  }
}

TEST(FileBarrier, ABrokenBarrierStaysBroken) {
  test::ScratchDir scratch;
  FileBarrier barrier(scratch.path(), 0, 2, milliseconds(50));
  EXPECT_THROW(barrier.wait(), DeadlineExceeded);
  EXPECT_THROW(barrier.wait(), RuntimeFailure);
}

TEST(FileBarrier, ArgumentsAreChecked) {
  test::ScratchDir scratch;
  EXPECT_THROW(FileBarrier(scratch.path(), 2, 2, kTimeout), InputError);
  EXPECT_THROW(FileBarrier(scratch.path(), 0, 0, kTimeout), InputError);
  EXPECT_THROW(FileBarrier(scratch.path(), 0, 1, milliseconds(0)), InputError);
}

// One rank as a process: `generations` waits, each after leaving a step-<r>-<g> marker and
// checking, after the wait, that every rank's marker for g is there. A process that is told to
// stop after `die_after` waits just exits (a crashed rank). The child's exit code: 0 all
// good, 1 a rank left a generation early, 2 a deadline (its message in error-<r>).
pid_t start_rank_process(const std::string& dir, std::uint32_t rank, std::uint32_t world,
                         int generations, milliseconds timeout, int die_after = -1) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  int code = 0;
  try {
    FileBarrier barrier(dir + "/barrier", rank, world, timeout);
    for (int g = 0; g < generations && code == 0; ++g) {
      if (g == die_after) ::_exit(0);
      std::ofstream(dir + "/step-" + std::to_string(rank) + "-" + std::to_string(g)).close();
      barrier.wait();
      for (std::uint32_t r = 0; r < world; ++r) {
        if (!exists(dir + "/step-" + std::to_string(r) + "-" + std::to_string(g))) code = 1;
      }
    }
  } catch (const DeadlineExceeded& e) {
    std::ofstream(dir + "/error-" + std::to_string(rank)) << e.what();
    code = 2;
  } catch (...) {
    code = 3;
  }
  ::_exit(code);
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(FileBarrier, ProcessesNeverLeaveAGenerationEarly) {
  test::ScratchDir scratch;
  constexpr std::uint32_t kWorld = 4;
  std::vector<pid_t> pids;
  for (std::uint32_t r = 0; r < kWorld; ++r) {
    pids.push_back(start_rank_process(scratch.path(), r, kWorld, 25, milliseconds(10000)));
  }
  for (std::uint32_t r = 0; r < kWorld; ++r) EXPECT_EQ(wait_exit_code(pids[r]), 0) << "rank " << r;
}

TEST(FileBarrier, ARankProcessThatDiesIsNamedByTheSurvivors) {
  test::ScratchDir scratch;
  // Rank 2 of 3 passes two generations and dies before the third.
  std::vector<pid_t> pids;
  const auto start = Clock::now();
  for (std::uint32_t r = 0; r < 3; ++r) {
    pids.push_back(start_rank_process(scratch.path(), r, 3, 5, kTimeout, r == 2 ? 2 : -1));
  }
  EXPECT_EQ(wait_exit_code(pids[2]), 0);
  for (std::uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(wait_exit_code(pids[r]), 2) << "rank " << r;
    EXPECT_EQ(
        test::ScratchDir::read(scratch.file("error-" + std::to_string(r))),
        "barrier generation 2 in " + scratch.file("barrier") + ": rank 2 missing after 0.3 s");
  }
  EXPECT_LT(Clock::now() - start, kTimeout + kSlack + milliseconds(200));
}

TEST(FileBarrier, ARankProcessThatNeverArrivesIsNamed) {
  test::ScratchDir scratch;
  std::vector<pid_t> pids;
  const auto start = Clock::now();
  for (std::uint32_t r : {0u, 2u}) {
    pids.push_back(start_rank_process(scratch.path(), r, 4, 3, kTimeout));
  }
  for (pid_t pid : pids) EXPECT_EQ(wait_exit_code(pid), 2);
  EXPECT_EQ(
      test::ScratchDir::read(scratch.file("error-0")),
      "barrier generation 0 in " + scratch.file("barrier") + ": ranks 1, 3 missing after 0.3 s");
  EXPECT_LT(Clock::now() - start, kTimeout + kSlack);
}

}  // namespace
}  // namespace rv
