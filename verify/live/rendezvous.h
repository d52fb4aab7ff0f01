// Where a live world rendezvouses: the root folder and the per-launch job id that name its
// job directory (core/rendezvous/job_directory.h). The supervisor hands them to the ranks it
// spawns through their environment, and a rank under an external launcher finds them the
// same way (options first, then the environment), so both sides resolve them here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/rendezvous/launcher_env.h"
#include "verify/live/run_plan.h"

namespace rv {

struct RendezvousPlace {
  std::string root;    // a directory every rank of the world can see
  std::string job_id;  // one per launch: the job directory is root/job_id
};

// --rendezvous, else REDUCE_VERIFY_RENDEZVOUS; nullopt when neither is given (a supervisor
// then makes a private temporary root, a rank refuses).
std::optional<std::string> given_rendezvous_root(const RunOptions& options, const EnvLookup& env);

// A rank's place: the root as above, the job id from --job-id, else the launcher's
// (derive_job_id). Throws InputError naming the rank and its launcher when either is missing,
// or when the job id is not a valid one.
RendezvousPlace rank_rendezvous(const RunOptions& options, const LaunchRank& launch,
                                const EnvLookup& env);

// The supervisor's job id for its world of `world` ranks: one no earlier run used, so a
// stale directory can never be joined.
std::string fresh_world_job_id(std::uint32_t world);

// The variables the supervisor adds to each rank's environment: the place, and the mark
// that tells the rank a supervisor prints and reports (see spawned_by_supervisor).
std::vector<std::pair<std::string, std::string>> supervised_rank_env(const RendezvousPlace& place);

// True for a rank the supervisor spawned: rank 0 then leaves printing and reporting to it.
bool spawned_by_supervisor(const LaunchRank& launch, const EnvLookup& env);

}  // namespace rv
