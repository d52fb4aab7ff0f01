// The job directory rendezvous: a fresh world opens on every rank; a reused, stale, closed
// or mismatched directory never lets a world start, and every refusal is prompt and named.
#include "core/rendezvous/job_directory.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rendezvous/atomic_file.h"
#include "core/rendezvous/launcher_env.h"
#include "tests/support/scratch_dir.h"

namespace rv {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kTimeout{400};
// How much later than its deadline a refusal may come: polling is at most 5 ms apart, the
// rest is a loaded 2-core box.
constexpr milliseconds kSlack{500};

bool is_directory(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// What open() did on one rank: the directory, or the error's class and message, and when.
struct Attempt {
  std::optional<JobDirectory> job;
  std::string error_class;  // "", "InputError", "DeadlineExceeded", "RuntimeFailure"
  std::string message;
  milliseconds took{0};
};

Attempt attempt_open(const std::string& root, const std::string& id, std::uint32_t rank,
                     std::uint32_t world, milliseconds timeout = kTimeout) {
  Attempt attempt;
  const auto start = Clock::now();
  try {
    attempt.job = JobDirectory::open(root, id, rank, world, timeout);
  } catch (const InputError& e) {
    attempt.error_class = "InputError";
    attempt.message = e.what();
  } catch (const DeadlineExceeded& e) {
    attempt.error_class = "DeadlineExceeded";
    attempt.message = e.what();
  } catch (const RuntimeFailure& e) {
    attempt.error_class = "RuntimeFailure";
    attempt.message = e.what();
  }
  attempt.took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  return attempt;
}

// One thread per rank, all opening at once; rank r of `ranks` uses worlds[r] (default W).
std::vector<Attempt> open_world(const std::string& root, const std::string& id, std::uint32_t world,
                                const std::vector<std::uint32_t>& ranks,
                                milliseconds timeout = kTimeout) {
  std::vector<std::future<Attempt>> futures;
  for (std::uint32_t r : ranks) {
    futures.push_back(
        std::async(std::launch::async, [=] { return attempt_open(root, id, r, world, timeout); }));
  }
  std::vector<Attempt> attempts;
  for (auto& f : futures) attempts.push_back(f.get());
  return attempts;
}

std::vector<std::uint32_t> all_ranks(std::uint32_t world) {
  std::vector<std::uint32_t> ranks;
  for (std::uint32_t r = 0; r < world; ++r) ranks.push_back(r);
  return ranks;
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << text << "\" lacks \"" << part << "\"";
}

TEST(JobDirectory, SingleRankWorldOpensAtOnce) {
  test::ScratchDir scratch;
  const std::string root = scratch.file("rendezvous/nested");  // created on demand
  const JobDirectory job = JobDirectory::open(root, "solo", 0, 1, kTimeout);
  EXPECT_EQ(job.path(), root + "/solo");
  EXPECT_EQ(job.file("x.json"), root + "/solo/x.json");
  EXPECT_TRUE(is_directory(job.gloo_store_dir()));
  EXPECT_EQ(job.nonce().size(), 32u);
  EXPECT_EQ(job.world_size(), 1u);
}

TEST(JobDirectory, FreshWorldOpensOnEveryRankWithOneNonce) {
  test::ScratchDir scratch;
  const auto attempts = open_world(scratch.path(), "fresh", 5, all_ranks(5));
  for (std::uint32_t r = 0; r < 5; ++r) {
    ASSERT_TRUE(attempts[r].job) << "rank " << r << ": " << attempts[r].message;
    EXPECT_EQ(attempts[r].job->rank(), r);
    EXPECT_EQ(attempts[r].job->nonce(), attempts[0].job->nonce());
    EXPECT_EQ(attempts[r].job->path(), scratch.file("fresh"));
  }
  EXPECT_TRUE(is_directory(attempts[3].job->gloo_store_dir()));
  // Two launches draw different nonces.
  const auto other = open_world(scratch.path(), "fresh-2", 2, all_ranks(2));
  ASSERT_TRUE(other[0].job);
  EXPECT_NE(other[0].job->nonce(), attempts[0].job->nonce());
}

TEST(JobDirectory, ReusedJobIdIsRefusedAtOnceOnEveryRank) {
  test::ScratchDir scratch;
  const auto first = open_world(scratch.path(), "reused", 4, all_ranks(4));
  for (const Attempt& a : first) ASSERT_TRUE(a.job) << a.message;

  // The second launch with the same id: no rank waits, every one says why.
  const auto second = open_world(scratch.path(), "reused", 4, all_ranks(4), milliseconds(5000));
  EXPECT_EQ(second[0].error_class, "InputError");
  expect_contains(second[0].message, "job directory " + scratch.file("reused") +
                                         " already exists: a stale or concurrent run with job "
                                         "id reused; use a fresh job id or remove it");
  for (std::uint32_t r = 1; r < 4; ++r) {
    EXPECT_EQ(second[r].error_class, "InputError") << second[r].message;
    expect_contains(second[r].message, "rank " + std::to_string(r) + " is already registered");
    expect_contains(second[r].message, "job id reused");
  }
  for (const Attempt& a : second) EXPECT_LT(a.took, milliseconds(1000)) << a.message;
}

TEST(JobDirectory, ClosedDirectoryIsRefused) {
  test::ScratchDir scratch;
  auto world = open_world(scratch.path(), "done", 2, all_ranks(2));
  ASSERT_TRUE(world[0].job && world[1].job);
  EXPECT_FALSE(world[0].job->is_closed());
  world[1].job->close();  // a no-op on ranks other than 0
  EXPECT_FALSE(world[0].job->is_closed());
  world[0].job->close();
  world[0].job->close();  // idempotent
  EXPECT_TRUE(world[1].job->is_closed());
  const Attempt late = attempt_open(scratch.path(), "done", 1, 2);
  EXPECT_EQ(late.error_class, "InputError");
  expect_contains(late.message, "is closed (finished)");
}

// A run whose rank 0 was SIGKILLed after publishing the world record, before its world was
// complete: the directory holds a record whose rank 0 is dead. Newcomers must never pass.
TEST(JobDirectory, StaleDirectoryOfACrashedRankZeroNeverLetsRanksJoin) {
  test::ScratchDir scratch;
  const std::string path = scratch.file("crashed");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      JobDirectory::open(scratch.path(), "crashed", 0, 3, milliseconds(60000));
    } catch (...) {
    }
    ::_exit(0);
  }
  const auto wait_start = Clock::now();
  while (!read_small_file(path + "/" + kWorldRecordFile)) {
    ASSERT_LT(Clock::now() - wait_start, std::chrono::seconds(10)) << "rank 0 never started";
    std::this_thread::sleep_for(milliseconds(1));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));

  // A new launch with the same id: its rank 0 is refused at once, its other ranks register in
  // the dead world and then wait for a confirmation that never comes.
  const auto attempts = open_world(scratch.path(), "crashed", 3, all_ranks(3));
  EXPECT_EQ(attempts[0].error_class, "InputError");
  expect_contains(attempts[0].message, "already exists");
  for (std::uint32_t r = 1; r < 3; ++r) {
    EXPECT_FALSE(attempts[r].job) << "rank " << r << " joined a dead world";
    EXPECT_EQ(attempts[r].error_class, "DeadlineExceeded") << attempts[r].message;
    expect_contains(attempts[r].message, "rank 0 did not confirm the world within 0.4 s");
    EXPECT_GE(attempts[r].took, kTimeout);
    EXPECT_LT(attempts[r].took, kTimeout + kSlack);
  }
  EXPECT_FALSE(read_small_file(path + "/" + kReadyFile).has_value());
  // And a third try finds every slot taken: refused at once.
  const Attempt again = attempt_open(scratch.path(), "crashed", 2, 3);
  EXPECT_EQ(again.error_class, "InputError") << again.message;
  EXPECT_LT(again.took, kTimeout);
}

// A run that completed its rendezvous and every barrier, then crashed without closing:
// everything a new launch could mistake for progress is on disk. Nobody may join it.
TEST(JobDirectory, StaleDirectoryOfACompletedWorldNeverLetsRanksJoin) {
  test::ScratchDir scratch;
  {
    auto crashed = open_world(scratch.path(), "left", 3, all_ranks(3));
    for (const Attempt& a : crashed) ASSERT_TRUE(a.job) << a.message;
    for (std::uint32_t r = 0; r < 3; ++r) {
      make_directories(crashed[0].job->file("barrier/gen-0"));
      write_file_atomically(crashed[0].job->file("barrier/gen-0/rank-" + std::to_string(r)), "");
    }
  }  // no close(): the processes "died"
  const auto attempts = open_world(scratch.path(), "left", 3, all_ranks(3), milliseconds(5000));
  for (std::uint32_t r = 0; r < 3; ++r) {
    EXPECT_FALSE(attempts[r].job) << "rank " << r << " joined a stale world";
    EXPECT_EQ(attempts[r].error_class, "InputError") << attempts[r].message;
    EXPECT_LT(attempts[r].took, milliseconds(1000));
  }
}

TEST(JobDirectory, WorldSizeMismatchIsRefused) {
  test::ScratchDir scratch;
  auto rank0 =
      std::async(std::launch::async, [&] { return attempt_open(scratch.path(), "sizes", 0, 3); });
  // Rank 1 believes in a world of 2: it must not register in a world of 3.
  while (!read_small_file(scratch.file("sizes/world")))
    std::this_thread::sleep_for(milliseconds(1));
  const Attempt rank1 = attempt_open(scratch.path(), "sizes", 1, 2);
  EXPECT_EQ(rank1.error_class, "InputError");
  expect_contains(rank1.message,
                  "belongs to a world of 3 ranks, but rank 1 was started in a "
                  "world of 2");
  EXPECT_FALSE(read_small_file(scratch.file("sizes/rank-1")).has_value());
  const Attempt zero = rank0.get();
  EXPECT_EQ(zero.error_class, "DeadlineExceeded");
  expect_contains(zero.message, "ranks 1, 2 did not join within 0.4 s");
}

TEST(JobDirectory, RankZeroNamesTheMissingRanksAndReleasesTheOthers) {
  test::ScratchDir scratch;
  // Ranks 1 and 3 of 4 never come. Rank 2 waits longer than rank 0, but rank 0 gives up,
  // closes the directory, and rank 2 hears of it at once.
  auto rank2 = std::async(std::launch::async, [&] {
    return attempt_open(scratch.path(), "partial", 2, 4, milliseconds(5000));
  });
  const Attempt zero = attempt_open(scratch.path(), "partial", 0, 4);
  const Attempt two = rank2.get();
  EXPECT_EQ(zero.error_class, "DeadlineExceeded");
  expect_contains(zero.message, "job directory " + scratch.file("partial") +
                                    ": ranks 1, 3 did not join within 0.4 s");
  EXPECT_LT(zero.took, kTimeout + kSlack);
  EXPECT_EQ(two.error_class, "RuntimeFailure") << two.message;
  expect_contains(two.message, "rank 0 gave up");
  expect_contains(two.message, "ranks 1, 3 did not join");
  EXPECT_LT(two.took, kTimeout + kSlack);
  const Attempt late = attempt_open(scratch.path(), "partial", 1, 4);
  EXPECT_EQ(late.error_class, "InputError");
  expect_contains(late.message, "is closed (abandoned");
}

TEST(JobDirectory, RankWithoutARankZeroTimesOutNamingIt) {
  test::ScratchDir scratch;
  const Attempt lonely = attempt_open(scratch.path(), "nobody", 1, 2);
  EXPECT_EQ(lonely.error_class, "DeadlineExceeded");
  expect_contains(lonely.message, "rank 1 found no world record from rank 0 after 0.4 s");
  EXPECT_GE(lonely.took, kTimeout);
  EXPECT_LT(lonely.took, kTimeout + kSlack);
}

TEST(JobDirectory, ARegistrationOfAnotherLaunchIsRefused) {
  test::ScratchDir scratch;
  auto rank0 = std::async(std::launch::async, [&] {
    return attempt_open(scratch.path(), "foreign", 0, 2, milliseconds(5000));
  });
  while (!read_small_file(scratch.file("foreign/world")))
    std::this_thread::sleep_for(milliseconds(1));
  ASSERT_TRUE(publish_file_exclusively(scratch.file("foreign/rank-1"),
                                       "nonce " + std::string(32, '0') + "\n"));
  const Attempt zero = rank0.get();
  EXPECT_EQ(zero.error_class, "RuntimeFailure");
  expect_contains(zero.message, "rank-1 was written for another launch");
  EXPECT_FALSE(read_small_file(scratch.file("foreign/ready")).has_value());
}

TEST(JobDirectory, ArgumentsAreChecked) {
  test::ScratchDir scratch;
  EXPECT_THROW(JobDirectory::open(scratch.path(), "../escape", 0, 1, kTimeout), InputError);
  EXPECT_THROW(JobDirectory::open(scratch.path(), "ok", 2, 2, kTimeout), InputError);
  EXPECT_THROW(JobDirectory::open(scratch.path(), "ok", 0, 0, kTimeout), InputError);
  EXPECT_THROW(JobDirectory::open("", "ok", 0, 1, kTimeout), InputError);
  EXPECT_THROW(JobDirectory::open(scratch.path(), "ok", 0, 1, milliseconds(0)), InputError);
}

TEST(JobDirectory, FreshJobIdsAreValidAndDistinct) {
  const std::string a = fresh_job_id(), b = fresh_job_id();
  EXPECT_NO_THROW(validate_job_id(a));
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("rv-", 0), 0u);
}

}  // namespace
}  // namespace rv
