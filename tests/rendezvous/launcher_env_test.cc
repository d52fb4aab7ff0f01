// The launcher variable chains, their precedence and their refusals; job ids and the
// rendezvous root.
#include "core/rendezvous/launcher_env.h"

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"

namespace rv {
namespace {

using Vars = std::map<std::string, std::string>;

LaunchRank detect(const Vars& vars) {
  const auto launch = detect_launch_rank(env_from_map(vars));
  if (!launch) throw std::runtime_error("no launcher detected");
  return *launch;
}

// The message of the InputError that detect/derive throws, or "" when none is thrown.
template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(LauncherEnv, NoLauncherIsNullopt) {
  EXPECT_FALSE(detect_launch_rank(env_from_map({})).has_value());
  // A Slurm allocation without a step (an salloc shell) has SLURM_NTASKS but no SLURM_PROCID:
  // that is a place to start a supervisor, not a rank.
  EXPECT_FALSE(detect_launch_rank(env_from_map({{"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "7"}})));
}

TEST(LauncherEnv, OurOwnVariables) {
  const LaunchRank launch = detect({{"REDUCE_VERIFY_RANK", "2"},
                                    {"REDUCE_VERIFY_WORLD_SIZE", "5"},
                                    {"REDUCE_VERIFY_LOCAL_RANK", "1"}});
  EXPECT_EQ(launch.launcher, "reduce-verify");
  EXPECT_EQ(launch.rank, 2u);
  EXPECT_EQ(launch.world, 5u);
  EXPECT_EQ(launch.local_rank, 1u);
}

TEST(LauncherEnv, Torchrun) {
  const LaunchRank launch = detect({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "3"}});
  EXPECT_EQ(launch.launcher, "torchrun");
  EXPECT_EQ(launch.rank, 3u);
  EXPECT_EQ(launch.world, 8u);
  EXPECT_EQ(launch.local_rank, 3u);
}

TEST(LauncherEnv, Slurm) {
  const LaunchRank launch =
      detect({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "1"}});
  EXPECT_EQ(launch.launcher, "slurm");
  EXPECT_EQ(launch.rank, 5u);
  EXPECT_EQ(launch.world, 6u);
  EXPECT_EQ(launch.local_rank, 1u);
}

TEST(LauncherEnv, OpenMpi) {
  const LaunchRank launch = detect({{"OMPI_COMM_WORLD_RANK", "0"},
                                    {"OMPI_COMM_WORLD_SIZE", "4"},
                                    {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  EXPECT_EQ(launch.launcher, "openmpi");
  EXPECT_EQ(launch.rank, 0u);
  EXPECT_EQ(launch.world, 4u);
}

TEST(LauncherEnv, MissingLocalRankDefaultsToRank) {
  const LaunchRank launch = detect({{"RANK", "2"}, {"WORLD_SIZE", "3"}});
  EXPECT_EQ(launch.local_rank, 2u);
}

TEST(LauncherEnv, PrecedenceIsOursThenTorchrunThenSlurmThenOpenMpi) {
  Vars all = {{"REDUCE_VERIFY_RANK", "1"},
              {"REDUCE_VERIFY_WORLD_SIZE", "2"},
              {"RANK", "2"},
              {"WORLD_SIZE", "3"},
              {"SLURM_PROCID", "3"},
              {"SLURM_NTASKS", "4"},
              {"OMPI_COMM_WORLD_RANK", "4"},
              {"OMPI_COMM_WORLD_SIZE", "5"}};
  EXPECT_EQ(detect(all).launcher, "reduce-verify");
  EXPECT_EQ(detect(all).world, 2u);
  all.erase("REDUCE_VERIFY_RANK");
  all.erase("REDUCE_VERIFY_WORLD_SIZE");
  EXPECT_EQ(detect(all).launcher, "torchrun");
  EXPECT_EQ(detect(all).world, 3u);
  all.erase("RANK");
  EXPECT_EQ(detect(all).launcher, "slurm");  // WORLD_SIZE alone does not make a torchrun rank
  EXPECT_EQ(detect(all).world, 4u);
  all.erase("SLURM_PROCID");
  EXPECT_EQ(detect(all).launcher, "openmpi");
  EXPECT_EQ(detect(all).world, 5u);
}

TEST(LauncherEnv, GarbageIsRefusedNamingTheVariable) {
  struct Case {
    Vars vars;
    std::string variable;
  };
  const Case cases[] = {
      {{{"RANK", "x"}, {"WORLD_SIZE", "2"}}, "RANK"},
      {{{"RANK", "-1"}, {"WORLD_SIZE", "2"}}, "RANK"},
      {{{"RANK", "1 "}, {"WORLD_SIZE", "2"}}, "RANK"},
      {{{"RANK", ""}, {"WORLD_SIZE", "2"}}, "RANK"},
      {{{"RANK", "0x1"}, {"WORLD_SIZE", "2"}}, "RANK"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}}, "WORLD_SIZE"},
      {{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "0"}}, "SLURM_NTASKS"},
      {{{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}, "SLURM_PROCID"},
      {{{"OMPI_COMM_WORLD_RANK", "1"}}, "OMPI_COMM_WORLD_SIZE"},
      {{{"OMPI_COMM_WORLD_RANK", "1"},
        {"OMPI_COMM_WORLD_SIZE", "2"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}},
       "OMPI_COMM_WORLD_LOCAL_RANK"},
      {{{"REDUCE_VERIFY_RANK", "3"}, {"REDUCE_VERIFY_WORLD_SIZE", "2"}}, "REDUCE_VERIFY_RANK"},
      {{{"REDUCE_VERIFY_WORLD_SIZE", "2"}}, "REDUCE_VERIFY_WORLD_SIZE"},
      {{{"REDUCE_VERIFY_LOCAL_RANK", "0"}}, "REDUCE_VERIFY_LOCAL_RANK"},
  };
  for (const Case& c : cases) {
    const std::string message = input_error([&] { detect_launch_rank(env_from_map(c.vars)); });
    EXPECT_NE(message, "") << "accepted a broken environment naming " << c.variable;
    EXPECT_NE(message.find(c.variable), std::string::npos) << message;
  }
}

TEST(LauncherEnv, GarbageInALowerLauncherIsIgnoredWhenAHigherOneIsSet) {
  // Once our own contract is complete, a stray torchrun variable is none of our business.
  const LaunchRank launch =
      detect({{"REDUCE_VERIFY_RANK", "0"}, {"REDUCE_VERIFY_WORLD_SIZE", "1"}, {"RANK", "junk"}});
  EXPECT_EQ(launch.launcher, "reduce-verify");
}

TEST(LauncherEnv, ProcessEnvReadsGetenv) {
  ::setenv("RV_LAUNCHER_ENV_TEST_VARIABLE", "value 1", 1);
  EXPECT_EQ(process_env()("RV_LAUNCHER_ENV_TEST_VARIABLE"), "value 1");
  ::unsetenv("RV_LAUNCHER_ENV_TEST_VARIABLE");
  EXPECT_FALSE(process_env()("RV_LAUNCHER_ENV_TEST_VARIABLE").has_value());
}

TEST(JobId, ValidIds) {
  for (const std::string id : {"a", "job-1", "123.4", "rv_x.Y-z", "...", ".hidden", "-x"}) {
    EXPECT_NO_THROW(validate_job_id(id)) << id;
  }
  EXPECT_NO_THROW(validate_job_id(std::string(128, 'a')));
}

TEST(JobId, InvalidIdsAreRefused) {
  for (const std::string id : {"", ".", "..", "a/b", "../x", "/abs", "a b", "tab\tx", "ünï",
                               "new\nline", "semi;colon", "star*"}) {
    EXPECT_THROW(validate_job_id(id), InputError) << id;
  }
  EXPECT_THROW(validate_job_id(std::string(129, 'a')), InputError);
  EXPECT_THROW(validate_job_id(std::string("nul\0x", 5)), InputError);
  const std::string message = input_error([] { validate_job_id("a/b"); });
  EXPECT_NE(message.find("\"a/b\""), std::string::npos) << message;
}

TEST(JobId, DerivationOrder) {
  Vars all = {{"REDUCE_VERIFY_JOB_ID", "ours"},
              {"SLURM_JOB_ID", "77"},
              {"SLURM_STEP_ID", "3"},
              {"TORCHELASTIC_RUN_ID", "elastic-9"},
              {"OMPI_MCA_ess_base_jobid", "4242"}};
  EXPECT_EQ(derive_job_id(env_from_map(all)), "ours");
  all.erase("REDUCE_VERIFY_JOB_ID");
  EXPECT_EQ(derive_job_id(env_from_map(all)), "77.3");
  all.erase("SLURM_STEP_ID");
  EXPECT_EQ(derive_job_id(env_from_map(all)), "77");
  all.erase("SLURM_JOB_ID");
  EXPECT_EQ(derive_job_id(env_from_map(all)), "elastic-9");
  all["TORCHELASTIC_RUN_ID"] = "none";  // torchrun's default: shared by every launch
  EXPECT_EQ(derive_job_id(env_from_map(all)), "4242");
  all.erase("OMPI_MCA_ess_base_jobid");
  EXPECT_FALSE(derive_job_id(env_from_map(all)).has_value());
  EXPECT_FALSE(derive_job_id(env_from_map({{"REDUCE_VERIFY_JOB_ID", ""}})).has_value());
}

TEST(JobId, DerivedIdsAreValidatedNamingTheVariable) {
  const std::string message = input_error([] {
    derive_job_id(env_from_map({{"REDUCE_VERIFY_JOB_ID", "../etc"}}));
  });
  EXPECT_NE(message.find("REDUCE_VERIFY_JOB_ID"), std::string::npos) << message;
  const std::string elastic = input_error([] {
    derive_job_id(env_from_map({{"TORCHELASTIC_RUN_ID", "a/b"}}));
  });
  EXPECT_NE(elastic.find("TORCHELASTIC_RUN_ID"), std::string::npos) << elastic;
}

TEST(Rendezvous, Root) {
  EXPECT_EQ(rendezvous_root(env_from_map({{"REDUCE_VERIFY_RENDEZVOUS", "/shared/rv"}})),
            "/shared/rv");
  EXPECT_FALSE(rendezvous_root(env_from_map({})).has_value());
  EXPECT_FALSE(rendezvous_root(env_from_map({{"REDUCE_VERIFY_RENDEZVOUS", ""}})).has_value());
}

}  // namespace
}  // namespace rv
