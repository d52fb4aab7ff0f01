// The self-spawn supervisor, with a fake rank program (fake_rank.cc): the first failure
// stops the rest promptly and is reported with its rank and how it ended; frozen and
// stubborn ranks are killed; signals to the supervisor reach the ranks; the ranks die with
// the supervisor; no rank process outlives any of this; the environment passes through.
#include "core/launch/supervisor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/rendezvous/atomic_file.h"
#include "tests/support/scratch_dir.h"

namespace rv {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

RankProcessSpec fake_world(const test::ScratchDir& scratch, std::uint32_t world,
                           std::vector<std::string> actions) {
  RankProcessSpec spec;
  spec.argv = {RV_FAKE_RANK_PATH};
  spec.argv.insert(spec.argv.end(), actions.begin(), actions.end());
  spec.world = world;
  spec.env = {{"FAKE_RANK_OUT", scratch.path()}};
  spec.grace = milliseconds(300);
  return spec;
}

std::vector<pid_t> rank_pids(const test::ScratchDir& scratch, std::uint32_t world) {
  std::vector<pid_t> pids;
  for (std::uint32_t r = 0; r < world; ++r) {
    const auto text = read_small_file(scratch.file("pid-" + std::to_string(r)));
    pids.push_back(text ? static_cast<pid_t>(std::atol(text->c_str())) : -1);
  }
  return pids;
}

// Waits until every rank has written its pid file (it has started).
std::vector<pid_t> wait_for_ranks(const test::ScratchDir& scratch, std::uint32_t world) {
  const auto start = Clock::now();
  for (;;) {
    const auto pids = rank_pids(scratch, world);
    bool all = true;
    for (pid_t pid : pids) all = all && pid > 0;
    if (all) return pids;
    if (Clock::now() - start > std::chrono::seconds(10)) return pids;
    std::this_thread::sleep_for(milliseconds(2));
  }
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

void expect_no_orphans(const test::ScratchDir& scratch, std::uint32_t world) {
  const auto pids = rank_pids(scratch, world);
  for (std::uint32_t r = 0; r < world; ++r) {
    ASSERT_GT(pids[r], 0) << "rank " << r << " never started";
    EXPECT_TRUE(process_gone(pids[r])) << "rank " << r << " (pid " << pids[r] << ") is still there";
  }
}

milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
}

TEST(Supervisor, AHealthyWorldExitsZero) {
  test::ScratchDir scratch;
  const WorldOutcome outcome = run_rank_processes(fake_world(scratch, 4, {"*:sleep=20"}));
  EXPECT_TRUE(outcome.ok()) << outcome.describe();
  EXPECT_EQ(outcome.describe(), "all 4 ranks exited 0");
  ASSERT_EQ(outcome.exits.size(), 4u);
  for (std::uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(outcome.exits[r].rank, r);
    EXPECT_TRUE(outcome.exits[r].exited);
    EXPECT_EQ(outcome.exits[r].code, 0);
    EXPECT_FALSE(outcome.exits[r].killed_by_us);
  }
  EXPECT_FALSE(outcome.first_failure.has_value());
  expect_no_orphans(scratch, 4);
}

TEST(Supervisor, EnvironmentPassesThroughAndTheRankContractIsSet) {
  test::ScratchDir scratch;
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  ::setenv("CUDA_VISIBLE_DEVICES", "3,1", 1);
  ::setenv("REDUCE_VERIFY_RANK", "7", 1);  // a stale contract in our own environment is replaced
  ::setenv("RV_SUPERVISOR_TEST_REPLACED", "parent", 1);
  RankProcessSpec spec = fake_world(
      scratch, 3,
      {"*:env=NCCL_NVLS_ENABLE", "*:env=CUDA_VISIBLE_DEVICES", "*:env=REDUCE_VERIFY_RANK",
       "*:env=REDUCE_VERIFY_WORLD_SIZE", "*:env=REDUCE_VERIFY_LOCAL_RANK",
       "*:env=RV_SUPERVISOR_TEST_REPLACED", "*:env=RV_ADDED"});
  spec.env.emplace_back("RV_SUPERVISOR_TEST_REPLACED", "child");
  spec.env.emplace_back("RV_ADDED", "yes");
  const WorldOutcome outcome = run_rank_processes(spec);
  ::unsetenv("REDUCE_VERIFY_RANK");
  ::unsetenv("NCCL_NVLS_ENABLE");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ::unsetenv("RV_SUPERVISOR_TEST_REPLACED");
  ASSERT_TRUE(outcome.ok()) << outcome.describe();
  for (std::uint32_t r = 0; r < 3; ++r) {
    const std::string rank = std::to_string(r);
    EXPECT_EQ(test::ScratchDir::read(scratch.file("env-" + rank)),
              "NCCL_NVLS_ENABLE=0\nCUDA_VISIBLE_DEVICES=3,1\nREDUCE_VERIFY_RANK=" + rank +
                  "\nREDUCE_VERIFY_WORLD_SIZE=3\nREDUCE_VERIFY_LOCAL_RANK=" + rank +
                  "\nRV_SUPERVISOR_TEST_REPLACED=child\nRV_ADDED=yes\n");
  }
}

TEST(Supervisor, TheFirstFailureStopsTheRestPromptly) {
  test::ScratchDir scratch;
  const auto start = Clock::now();
  const WorldOutcome outcome =
      run_rank_processes(fake_world(scratch, 4, {"2:sleep=100", "2:exit=3", "*:sleep=30000"}));
  const milliseconds took = since(start);
  EXPECT_FALSE(outcome.ok());
  ASSERT_TRUE(outcome.first_failure.has_value());
  EXPECT_EQ(outcome.first_failure->rank, 2u);
  EXPECT_TRUE(outcome.first_failure->exited);
  EXPECT_EQ(outcome.first_failure->code, 3);
  EXPECT_FALSE(outcome.first_failure->killed_by_us);
  EXPECT_EQ(outcome.describe(),
            "rank 2 exited with code 3; ranks 0, 1, 3 stopped by the supervisor");
  for (std::uint32_t r : {0u, 1u, 3u}) {
    EXPECT_TRUE(outcome.exits[r].killed_by_us);
    EXPECT_EQ(outcome.exits[r].signal, SIGTERM) << "rank " << r;
  }
  // The ranks sleep 30 s; the world must be gone well within the grace period.
  EXPECT_LT(took, milliseconds(1500));
  EXPECT_LT(outcome.stop_time, milliseconds(300));
  std::printf("[timing] rank 2 exit 3 at %lld ms; world reaped %lld ms later; total %lld ms\n",
              static_cast<long long>(outcome.first_failure->elapsed.count()),
              static_cast<long long>(outcome.stop_time.count()),
              static_cast<long long>(took.count()));
  expect_no_orphans(scratch, 4);
}

TEST(Supervisor, ARankKilledBySignalIsReportedWithTheSignal) {
  test::ScratchDir scratch;
  const auto start = Clock::now();
  const WorldOutcome outcome =
      run_rank_processes(fake_world(scratch, 3, {"1:sleep=100", "1:kill", "*:sleep=30000"}));
  const milliseconds took = since(start);
  ASSERT_TRUE(outcome.first_failure.has_value());
  EXPECT_EQ(outcome.first_failure->rank, 1u);
  EXPECT_FALSE(outcome.first_failure->exited);
  EXPECT_EQ(outcome.first_failure->signal, SIGKILL);
  EXPECT_EQ(outcome.describe(),
            "rank 1 was killed by signal 9 (SIGKILL); ranks 0, 2 stopped by the supervisor");
  EXPECT_LT(took, milliseconds(1500));
  std::printf("[timing] rank 1 SIGKILL at %lld ms; world reaped %lld ms later\n",
              static_cast<long long>(outcome.first_failure->elapsed.count()),
              static_cast<long long>(outcome.stop_time.count()));
  expect_no_orphans(scratch, 3);
}

TEST(Supervisor, AStoppedRankIsKilled) {
  test::ScratchDir scratch;
  // Rank 1 freezes (SIGSTOP); rank 0 then fails. A stopped process does not act on SIGTERM
  // until it is continued: the supervisor must still get rid of it.
  const WorldOutcome outcome = run_rank_processes(
      fake_world(scratch, 3, {"1:stop", "0:sleep=150", "0:exit=3", "*:sleep=30000"}));
  ASSERT_TRUE(outcome.first_failure.has_value());
  EXPECT_EQ(outcome.first_failure->rank, 0u);
  EXPECT_TRUE(outcome.exits[1].killed_by_us);
  EXPECT_FALSE(outcome.exits[1].exited);
  EXPECT_LT(outcome.stop_time, milliseconds(300));  // SIGCONT with the SIGTERM: no grace wait
  expect_no_orphans(scratch, 3);
}

TEST(Supervisor, AStoppedRankThatIgnoresSigtermIsKilledAfterTheGrace) {
  test::ScratchDir scratch;
  const WorldOutcome outcome = run_rank_processes(fake_world(
      scratch, 3, {"1:ignore-term", "1:stop", "0:sleep=150", "0:exit=4", "*:sleep=30000"}));
  ASSERT_TRUE(outcome.first_failure.has_value());
  EXPECT_EQ(outcome.first_failure->code, 4);
  EXPECT_EQ(outcome.exits[1].signal, SIGKILL);
  EXPECT_EQ(outcome.exits[2].signal, SIGTERM);
  EXPECT_GE(outcome.stop_time, milliseconds(300));
  EXPECT_LT(outcome.stop_time, milliseconds(800));
  std::printf("[timing] SIGTERM-ignoring stopped rank SIGKILLed; stop took %lld ms (grace 300)\n",
              static_cast<long long>(outcome.stop_time.count()));
  expect_no_orphans(scratch, 3);
}

TEST(Supervisor, TheDeadlineStopsAHungWorld) {
  test::ScratchDir scratch;
  RankProcessSpec spec = fake_world(scratch, 4, {"3:stop", "*:sleep=30000"});
  spec.deadline = milliseconds(400);
  const auto start = Clock::now();
  const WorldOutcome outcome = run_rank_processes(spec);
  const milliseconds took = since(start);
  EXPECT_FALSE(outcome.ok());
  EXPECT_TRUE(outcome.deadline_passed);
  EXPECT_FALSE(outcome.first_failure.has_value());
  EXPECT_EQ(outcome.describe(), "the deadline passed; ranks 0, 1, 2, 3 stopped by the supervisor");
  EXPECT_GE(took, milliseconds(400));
  EXPECT_LT(took, milliseconds(1200));
  std::printf("[timing] deadline 400 ms: world gone after %lld ms\n",
              static_cast<long long>(took.count()));
  expect_no_orphans(scratch, 4);
}

TEST(Supervisor, RanksThatFailOnTheirOwnAreListed) {
  test::ScratchDir scratch;
  // Rank 0 exits 0 early; rank 1 fails; rank 2 ignores SIGTERM and exits 5 on its own, in the
  // grace period.
  const WorldOutcome outcome =
      run_rank_processes(fake_world(scratch, 4,
                                    {"0:exit=0", "1:sleep=100", "1:exit=3", "2:ignore-term",
                                     "2:sleep=250", "2:exit=5", "*:sleep=30000"}));
  EXPECT_EQ(outcome.describe(),
            "rank 1 exited with code 3; rank 2 exited with code 5; rank 0 "
            "exited 0; rank 3 stopped by the supervisor");
  EXPECT_TRUE(outcome.exits[2].killed_by_us);  // signalled, though it ended on its own
}

// Runs a supervisor in a forked child; returns its pid. The child exits with 0 when the
// outcome says its ranks were stopped by `expected_forward` (0: no check), else 1.
pid_t fork_supervisor(const RankProcessSpec& spec, int expected_forward,
                      const std::string& describe_file) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  int code = 1;
  try {
    const WorldOutcome outcome = run_rank_processes(spec);
    std::ofstream(describe_file) << outcome.describe();
    bool all_stopped = true;
    for (const RankExit& e : outcome.exits) all_stopped = all_stopped && e.killed_by_us;
    code = (outcome.forwarded_signal == expected_forward && all_stopped) ? 0 : 1;
  } catch (...) {
    code = 2;
  }
  ::_exit(code);
}

TEST(Supervisor, SigtermAndSigintToTheSupervisorReachTheRanks) {
  for (int signal : {SIGTERM, SIGINT}) {
    test::ScratchDir scratch;
    const pid_t supervisor =
        fork_supervisor(fake_world(scratch, 3, {"*:sleep=30000"}), signal, scratch.file("out"));
    ASSERT_GT(supervisor, 0);
    wait_for_ranks(scratch, 3);
    const auto start = Clock::now();
    ::kill(supervisor, signal);
    int status = 0;
    ASSERT_EQ(::waitpid(supervisor, &status, 0), supervisor);
    const milliseconds took = since(start);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << signal_name(signal) << ": " << test::ScratchDir::read(scratch.file("out"));
    EXPECT_EQ(test::ScratchDir::read(scratch.file("out")),
              "the supervisor received " + signal_name(signal) +
                  "; ranks 0, 1, 2 stopped by the supervisor");
    EXPECT_LT(took, milliseconds(1000));
    std::printf("[timing] %s to the supervisor: world gone after %lld ms\n",
                signal_name(signal).c_str(), static_cast<long long>(took.count()));
    expect_no_orphans(scratch, 3);
  }
}

TEST(Supervisor, RanksDieWithAKilledSupervisor) {
  test::ScratchDir scratch;
  // Orphans would be re-parented to init, where we could not see them die; as a subreaper we
  // get them, and can reap them and see how they ended.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const pid_t supervisor =
      fork_supervisor(fake_world(scratch, 3, {"*:sleep=30000"}), 0, scratch.file("out"));
  const auto pids = wait_for_ranks(scratch, 3);
  const auto start = Clock::now();
  ::kill(supervisor, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(supervisor, &status, 0), supervisor);
  for (std::uint32_t r = 0; r < 3; ++r) {
    ASSERT_GT(pids[r], 0);
    int rank_status = 0;
    // PDEATHSIG is immediate; the loop only bounds a broken implementation.
    pid_t done = 0;
    while ((done = ::waitpid(pids[r], &rank_status, WNOHANG)) == 0 &&
           since(start) < milliseconds(3000)) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    EXPECT_EQ(done, pids[r]) << "rank " << r << " outlived its supervisor";
    if (done == pids[r]) {
      EXPECT_TRUE(WIFSIGNALED(rank_status) && WTERMSIG(rank_status) == SIGKILL);
    } else {
      ::kill(pids[r], SIGKILL);
      ::waitpid(pids[r], &rank_status, 0);
    }
  }
  std::printf("[timing] supervisor SIGKILLed: all ranks dead after %lld ms\n",
              static_cast<long long>(since(start).count()));
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(Supervisor, AProgramThatCannotStartIsARuntimeFailure) {
  test::ScratchDir scratch;
  RankProcessSpec spec;
  spec.world = 3;
  spec.argv = {scratch.file("no-such-program")};
  try {
    run_rank_processes(spec);
    FAIL() << "started a missing program";
  } catch (const RuntimeFailure& e) {
    EXPECT_EQ(std::string(e.what()), "supervisor: cannot start rank 0: exec " +
                                         scratch.file("no-such-program") +
                                         ": No such file or directory");
  }
  spec.argv = {"rv-no-such-program-in-path"};
  EXPECT_THROW(run_rank_processes(spec), RuntimeFailure);
  spec.argv = {};
  EXPECT_THROW(run_rank_processes(spec), InputError);
  spec.argv = {RV_FAKE_RANK_PATH};
  spec.world = 0;
  EXPECT_THROW(run_rank_processes(spec), InputError);
}

TEST(Supervisor, ProgramsAreFoundInPath) {
  RankProcessSpec spec;
  spec.world = 2;
  spec.argv = {"true"};
  EXPECT_TRUE(run_rank_processes(spec).ok());
  spec.argv = {"false"};
  const WorldOutcome outcome = run_rank_processes(spec);
  ASSERT_TRUE(outcome.first_failure.has_value());
  EXPECT_EQ(outcome.first_failure->code, 1);
}

TEST(Supervisor, SignalNames) {
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(200), "signal 200");
}

}  // namespace
}  // namespace rv
