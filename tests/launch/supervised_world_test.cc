// The launch layer end to end in real processes: the supervisor starts W ranks, which find
// their rank in the environment, meet in the job directory and pass file barriers.
#include <signal.h>

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "core/launch/supervisor.h"
#include "tests/support/scratch_dir.h"

namespace rv {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

RankProcessSpec world_spec(const test::ScratchDir& scratch, const std::string& job_id,
                           std::uint32_t world, std::vector<std::string> args) {
  RankProcessSpec spec;
  spec.argv = {RV_LAUNCH_RANK_PATH};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.world = world;
  spec.env = {{"REDUCE_VERIFY_RENDEZVOUS", scratch.path()}, {"REDUCE_VERIFY_JOB_ID", job_id}};
  spec.grace = milliseconds(500);
  spec.deadline = milliseconds(20000);  // a hang fails the test instead of blocking it
  return spec;
}

TEST(SupervisedWorld, RanksMeetAndPassBarriers) {
  test::ScratchDir scratch;
  const auto start = Clock::now();
  const WorldOutcome outcome = run_rank_processes(world_spec(scratch, "healthy", 5, {"30"}));
  EXPECT_TRUE(outcome.ok()) << outcome.describe();
  EXPECT_EQ(test::ScratchDir::read(scratch.file("healthy/closed")), "finished\n");
  std::printf("[timing] 5 rank processes: rendezvous + 30 barriers in %lld ms\n",
              static_cast<long long>(
                  std::chrono::duration_cast<milliseconds>(Clock::now() - start).count()));
}

TEST(SupervisedWorld, AReusedJobIdFailsEveryRankAsBadInput) {
  test::ScratchDir scratch;
  ASSERT_TRUE(run_rank_processes(world_spec(scratch, "again", 3, {"1"})).ok());
  const auto start = Clock::now();
  const WorldOutcome outcome = run_rank_processes(world_spec(scratch, "again", 3, {"1"}));
  ASSERT_TRUE(outcome.first_failure.has_value()) << outcome.describe();
  EXPECT_EQ(outcome.first_failure->code, 2);
  EXPECT_LT(Clock::now() - start, milliseconds(2000));  // no rank waited out its deadline
}

TEST(SupervisedWorld, ARankThatDiesMidRunTakesTheWorldDownPromptly) {
  test::ScratchDir scratch;
  const auto start = Clock::now();
  const WorldOutcome outcome =
      run_rank_processes(world_spec(scratch, "dies", 4, {"1000000", "2", "20", "kill"}));
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  ASSERT_TRUE(outcome.first_failure.has_value()) << outcome.describe();
  EXPECT_EQ(outcome.describe(),
            "rank 2 was killed by signal 9 (SIGKILL); ranks 0, 1, 3 stopped by the supervisor");
  // The survivors' barrier deadline is 5 s: the supervisor must not need it.
  EXPECT_LT(took, milliseconds(3000));
  std::printf("[timing] rank 2 SIGKILLed at %lld ms; world reaped %lld ms later\n",
              static_cast<long long>(outcome.first_failure->elapsed.count()),
              static_cast<long long>(outcome.stop_time.count()));
}

TEST(SupervisedWorld, AFrozenRankIsNamedByTheSurvivorsAndKilled) {
  test::ScratchDir scratch;
  RankProcessSpec spec = world_spec(scratch, "frozen", 4, {"1000000", "1", "10", "stop"});
  spec.env.emplace_back("LAUNCH_RANK_TIMEOUT_MS", "500");
  const auto start = Clock::now();
  const WorldOutcome outcome = run_rank_processes(spec);
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  // A survivor's barrier times out naming rank 1 (on stderr) and exits 3; the supervisor then
  // stops the world, the frozen rank included.
  ASSERT_TRUE(outcome.first_failure.has_value()) << outcome.describe();
  EXPECT_NE(outcome.first_failure->rank, 1u);
  EXPECT_EQ(outcome.first_failure->code, 3);
  EXPECT_TRUE(outcome.exits[1].killed_by_us);
  EXPECT_FALSE(outcome.exits[1].exited);
  EXPECT_LT(took, milliseconds(500 + 1500));
  std::printf(
      "[timing] rank 1 frozen: first survivor out at %lld ms (barrier timeout 500 ms), "
      "world reaped %lld ms later\n",
      static_cast<long long>(outcome.first_failure->elapsed.count()),
      static_cast<long long>(outcome.stop_time.count()));
}

}  // namespace
}  // namespace rv
