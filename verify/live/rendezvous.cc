#include "verify/live/rendezvous.h"

#include "core/error.h"
#include "core/rendezvous/job_directory.h"

namespace rv {
namespace {

// Set by the supervisor in each rank's environment (with REDUCE_VERIFY_RENDEZVOUS and
// REDUCE_VERIFY_JOB_ID): the rank's rank-0 hands its verdicts over instead of printing them.
constexpr const char* kSupervisedVariable = "REDUCE_VERIFY_SUPERVISED";

std::string who(const LaunchRank& launch) {
  return "rank " + std::to_string(launch.rank) + " (launched by " + launch.launcher + ")";
}

}  // namespace

std::optional<std::string> given_rendezvous_root(const RunOptions& options, const EnvLookup& env) {
  if (!options.rendezvous.empty()) return options.rendezvous;
  return rendezvous_root(env);
}

RendezvousPlace rank_rendezvous(const RunOptions& options, const LaunchRank& launch,
                                const EnvLookup& env) {
  RendezvousPlace place;
  place.root = given_rendezvous_root(options, env).value_or("");
  if (place.root.empty()) {
    throw InputError(who(launch) +
                     ": no rendezvous directory; pass --rendezvous DIR (a directory every "
                     "rank can see) or set REDUCE_VERIFY_RENDEZVOUS");
  }
  place.job_id = options.job_id;
  if (place.job_id.empty()) place.job_id = derive_job_id(env).value_or("");
  if (place.job_id.empty()) {
    throw InputError(who(launch) +
                     ": no job id; pass --job-id ID or set REDUCE_VERIFY_JOB_ID (or run under "
                     "a launcher that provides one: Slurm, torchrun, Open MPI)");
  }
  validate_job_id(place.job_id);
  return place;
}

std::string fresh_world_job_id(std::uint32_t world) {
  return fresh_job_id() + "-w" + std::to_string(world);
}

std::vector<std::pair<std::string, std::string>> supervised_rank_env(const RendezvousPlace& place) {
  return {{kRendezvousVariable, place.root},
          {kJobIdVariable, place.job_id},
          {kSupervisedVariable, "1"}};
}

bool spawned_by_supervisor(const LaunchRank& launch, const EnvLookup& env) {
  return launch.launcher == "reduce-verify" && env(kSupervisedVariable).has_value();
}

}  // namespace rv
