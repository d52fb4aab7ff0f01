// How a supervised `run` ends when it is told to stop, or killed: SIGINT and SIGTERM stop
// every world of the run (not only the current one) within the timeout, exit 128 + the
// signal, leave an earlier report as it was, and leave no rank process and no job directory;
// SIGKILL takes the ranks with it, and what it leaves is removed by the next run or by
// `run --clean`. Also --job-id under the supervisor and a failed world's job directory.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "tests/e2e/live_process.h"
#include "tests/support/process.h"
#include "tests/support/scratch_dir.h"

namespace rv::test {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

const milliseconds kAllowed{3000 + 2000};  // --timeout 3, plus the supervisor's grace

std::string tool() {
  const char* other = std::getenv("RV_TOOL_UNDER_TEST");  // see tests/cli/cli_support.h
  return other && *other ? other : RV_TOOL_PATH;
}

// Long enough never to finish by itself within a test; `seed` marks the test's processes.
std::string long_case(int world, int seed) {
  return "contract=fixed-order,op=sum,w=" + std::to_string(world) +
         ",n=1000003,dist=normal,seed=" + std::to_string(seed) + ",gen=1";
}

std::string small_case(int world) {
  return "contract=fixed-order,op=sum,w=" + std::to_string(world) +
         ",n=1000,dist=normal,seed=1,gen=1";
}

std::vector<std::string> run_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {tool(), "run", "--transport", "gloo", "--timeout", "3"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Waits until the supervisor has its `world` ranks, then a little longer (mid-reduction).
std::vector<pid_t> ranks_mid_run(const LiveProcess& supervisor, std::size_t world) {
  std::vector<pid_t> ranks;
  for (int tries = 0; tries < 500 && ranks.size() < world; ++tries) {
    std::this_thread::sleep_for(milliseconds(10));
    ranks = children_of(supervisor.pid());
  }
  std::this_thread::sleep_for(milliseconds(500));
  return ranks;
}

// Rank processes die asynchronously after their supervisor: allow them a moment.
bool gone_soon(const std::string& marker) {
  for (int tries = 0; tries < 200; ++tries) {
    if (!any_process_with(marker)) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += n + " ";
  return text;
}

void expect_stopped_by(int signal, bool given_root) {
  ScratchDir dir;
  const std::string tmp = dir.file("tmp");
  const std::string root = dir.file("root");
  std::filesystem::create_directories(tmp);
  std::filesystem::create_directories(root);
  const std::string report = dir.write("report.json", "the previous report\n");
  const int seed = 7100 + signal + (given_root ? 50 : 0);
  std::vector<std::string> args = {
      "--case", long_case(2, seed), "--case", long_case(3, seed), "--iters",
      "1000",   "--report",         report};
  if (given_root) {
    args.push_back("--rendezvous");
    args.push_back(root);
  }
  LiveProcess run(run_args(args), {"TMPDIR=" + tmp}, dir.file("sup"));
  ASSERT_EQ(ranks_mid_run(run, 2).size(), 2u);
  const auto start = Clock::now();
  ASSERT_EQ(::kill(run.pid(), signal), 0);
  ASSERT_TRUE(run.wait(kAllowed)) << "the supervisor did not end within timeout + 2 s";
  EXPECT_LT(Clock::now() - start, kAllowed);
  EXPECT_EQ(run.exit_code(), 128 + signal) << run.err();
  EXPECT_NE(
      run.err().find(std::string("run stopped by ") + (signal == SIGINT ? "SIGINT" : "SIGTERM")),
      std::string::npos)
      << run.err();
  EXPECT_NE(run.err().find("W = 2, 3 did not finish"), std::string::npos)
      << "the world of 3 ran after the signal: " << run.err();
  EXPECT_EQ(ScratchDir::read(report), "the previous report\n") << "the report was overwritten";
  EXPECT_TRUE(gone_soon("seed=" + std::to_string(seed))) << "a rank process outlived the run";
  EXPECT_TRUE(entries(tmp).empty()) << "left in TMPDIR: " << joined(entries(tmp));
  EXPECT_TRUE(entries(root).empty()) << "left in the rendezvous root: " << joined(entries(root));
}

TEST(RunStop, SigintStopsEveryWorld) { expect_stopped_by(SIGINT, false); }

TEST(RunStop, SigtermStopsEveryWorldUnderAGivenRendezvous) { expect_stopped_by(SIGTERM, true); }

// SIGKILL cannot be caught: the ranks die with the supervisor (PR_SET_PDEATHSIG), and the
// private rendezvous root it leaves is removed by `run --clean`, the job directory it leaves
// under a given --rendezvous by the next run there.
TEST(RunStop, SigkillTakesTheRanksAndTheNextRunCleansUp) {
  ScratchDir dir;
  const std::string tmp = dir.file("tmp");
  const std::string root = dir.file("root");
  std::filesystem::create_directories(tmp);
  std::filesystem::create_directories(root);
  const int seed = 7301;
  {
    LiveProcess run(run_args({"--case", long_case(3, seed), "--iters", "1000"}), {"TMPDIR=" + tmp},
                    dir.file("sup1"));
    ASSERT_EQ(ranks_mid_run(run, 3).size(), 3u);
    ASSERT_EQ(::kill(run.pid(), SIGKILL), 0);
    ASSERT_TRUE(run.wait(milliseconds(2000)));
    EXPECT_TRUE(gone_soon("seed=" + std::to_string(seed))) << "a rank outlived its supervisor";
  }
  ASSERT_FALSE(entries(tmp).empty()) << "nothing left to clean: the test proves nothing";
  ProcessOptions options;
  options.extra_env = {"TMPDIR=" + tmp};
  const ProcessResult clean = run_process({tool(), "run", "--clean"}, options);
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_NE(clean.out.find("removed " + tmp + "/reduce-verify-"), std::string::npos) << clean.out;
  EXPECT_TRUE(entries(tmp).empty()) << "left in TMPDIR: " << joined(entries(tmp));

  {
    LiveProcess run(
        run_args({"--case", long_case(3, seed + 1), "--iters", "1000", "--rendezvous", root}), {},
        dir.file("sup2"));
    ASSERT_EQ(ranks_mid_run(run, 3).size(), 3u);
    ASSERT_EQ(::kill(run.pid(), SIGKILL), 0);
    ASSERT_TRUE(run.wait(milliseconds(2000)));
    EXPECT_TRUE(gone_soon("seed=" + std::to_string(seed + 1)));
  }
  ASSERT_FALSE(entries(root).empty());
  const ProcessResult next = run_process(run_args({"--case", small_case(2), "--rendezvous", root}));
  EXPECT_EQ(next.exit_code, 0) << next.out << next.err;
  EXPECT_TRUE(entries(root).empty()) << "left in the rendezvous root: " << joined(entries(root));
}

// --job-id names the run; the supervisor derives one id per world from it, so every world
// rendezvouses apart, and none of their directories stays.
TEST(RunStop, JobIdUnderTheSupervisorNamesEveryWorld) {
  ScratchDir dir;
  const ProcessResult result =
      run_process(run_args({"--case", small_case(2), "--case", small_case(3), "--job-id", "myjob",
                            "--rendezvous", dir.path()}));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("6 passed, 0 failed"), std::string::npos) << result.out;
  EXPECT_TRUE(entries(dir.path()).empty()) << joined(entries(dir.path()));
}

// A world that fails (a rank killed) leaves no job directory behind either.
TEST(RunStop, FailedWorldLeavesNoJobDirectory) {
  ScratchDir dir;
  const std::string root = dir.file("root");
  std::filesystem::create_directories(root);
  LiveProcess run(run_args({"--case", long_case(3, 7401), "--iters", "1000", "--rendezvous", root}),
                  {}, dir.file("sup"));
  const std::vector<pid_t> ranks = ranks_mid_run(run, 3);
  ASSERT_EQ(ranks.size(), 3u);
  ASSERT_EQ(::kill(ranks[1], SIGKILL), 0);
  ASSERT_TRUE(run.wait(kAllowed));
  EXPECT_EQ(run.exit_code(), 3) << run.err();
  EXPECT_TRUE(entries(root).empty()) << "left in the rendezvous root: " << joined(entries(root));
}

}  // namespace
}  // namespace rv::test
