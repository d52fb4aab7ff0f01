// Where a live world rendezvouses, resolved in one place for the supervisor and its ranks:
// the options come before the environment; a rank with no directory or no job id is refused,
// naming the rank and its launcher; and what the supervisor puts in a rank's environment is
// exactly what that rank resolves (and tells it that the supervisor reports).
#include "verify/live/rendezvous.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"

namespace rv {
namespace {

using Vars = std::map<std::string, std::string>;

LaunchRank rank_of(std::uint32_t rank, std::uint32_t world, const std::string& launcher) {
  LaunchRank launch;
  launch.rank = rank;
  launch.world = world;
  launch.local_rank = rank;
  launch.launcher = launcher;
  return launch;
}

std::string input_error(const RunOptions& options, const LaunchRank& launch, const Vars& vars) {
  try {
    rank_rendezvous(options, launch, env_from_map(vars));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(LiveRendezvous, OptionsComeBeforeTheEnvironment) {
  RunOptions options;
  const Vars vars = {{"REDUCE_VERIFY_RENDEZVOUS", "/env/rv"}, {"REDUCE_VERIFY_JOB_ID", "env-id"}};
  EXPECT_EQ(given_rendezvous_root(options, env_from_map(vars)), "/env/rv");
  EXPECT_FALSE(given_rendezvous_root(options, env_from_map({})).has_value());
  options.rendezvous = "/opt/rv";
  options.job_id = "opt-id";
  EXPECT_EQ(given_rendezvous_root(options, env_from_map(vars)), "/opt/rv");
  const RendezvousPlace place =
      rank_rendezvous(options, rank_of(1, 2, "torchrun"), env_from_map(vars));
  EXPECT_EQ(place.root, "/opt/rv");
  EXPECT_EQ(place.job_id, "opt-id");
}

TEST(LiveRendezvous, TheJobIdMayComeFromTheLauncher) {
  RunOptions options;
  options.rendezvous = "/shared/rv";
  const RendezvousPlace place =
      rank_rendezvous(options, rank_of(3, 4, "slurm"),
                      env_from_map({{"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "2"}}));
  EXPECT_EQ(place.job_id, "77.2");
}

TEST(LiveRendezvous, ARankWithoutADirectoryOrAJobIdIsRefusedByName) {
  RunOptions options;
  EXPECT_EQ(input_error(options, rank_of(2, 4, "openmpi"), {}),
            "rank 2 (launched by openmpi): no rendezvous directory; pass --rendezvous DIR (a "
            "directory every rank can see) or set REDUCE_VERIFY_RENDEZVOUS");
  options.rendezvous = "/shared/rv";
  EXPECT_EQ(input_error(options, rank_of(2, 4, "openmpi"), {}),
            "rank 2 (launched by openmpi): no job id; pass --job-id ID or set "
            "REDUCE_VERIFY_JOB_ID (or run under a launcher that provides one: Slurm, torchrun, "
            "Open MPI)");
  options.job_id = "../etc";
  EXPECT_NE(input_error(options, rank_of(2, 4, "openmpi"), {}), "");
}

TEST(LiveRendezvous, WhatTheSupervisorSetsIsWhatItsRankFinds) {
  const std::string job_id = fresh_world_job_id(4);
  EXPECT_NO_THROW(validate_job_id(job_id));
  EXPECT_EQ(job_id.substr(job_id.size() - 3), "-w4");
  EXPECT_NE(job_id, fresh_world_job_id(4));

  Vars vars;
  for (const auto& [name, value] : supervised_rank_env({"/tmp/rv-x", job_id})) vars[name] = value;
  const LaunchRank launch = rank_of(1, 4, "reduce-verify");
  const RendezvousPlace place = rank_rendezvous(RunOptions{}, launch, env_from_map(vars));
  EXPECT_EQ(place.root, "/tmp/rv-x");
  EXPECT_EQ(place.job_id, job_id);
  EXPECT_TRUE(spawned_by_supervisor(launch, env_from_map(vars)));
  // Without the mark, or under another launcher, rank 0 prints and reports itself.
  EXPECT_FALSE(spawned_by_supervisor(launch, env_from_map({{"REDUCE_VERIFY_JOB_ID", job_id}})));
  EXPECT_FALSE(spawned_by_supervisor(rank_of(1, 4, "torchrun"), env_from_map(vars)));
}

}  // namespace
}  // namespace rv
