// Who this process is in a world, read from the environment a launcher left: our own
// variables (set by the supervisor, or by hand), then torchrun, Slurm and Open MPI. Also the
// per-launch job id and the rendezvous root, which name the job directory (job_directory.h).
//
// Every lookup goes through an EnvLookup, so tests feed a map instead of the process's
// environment.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace rv {

// Our own rank contract: what the supervisor sets in each child's environment.
inline constexpr const char* kRankVariable = "REDUCE_VERIFY_RANK";
inline constexpr const char* kWorldSizeVariable = "REDUCE_VERIFY_WORLD_SIZE";
inline constexpr const char* kLocalRankVariable = "REDUCE_VERIFY_LOCAL_RANK";
inline constexpr const char* kJobIdVariable = "REDUCE_VERIFY_JOB_ID";
inline constexpr const char* kRendezvousVariable = "REDUCE_VERIFY_RENDEZVOUS";

struct LaunchRank {
  std::uint32_t rank = 0, world = 1, local_rank = 0;
  // "reduce-verify", "torchrun", "slurm" or "openmpi": whose variables these were.
  std::string launcher;
};

// nullopt when the variable is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

EnvLookup process_env();  // getenv, at the time of each call
EnvLookup env_from_map(std::map<std::string, std::string> variables);

// The first launcher whose rank variable is set, in the order reduce-verify, torchrun,
// slurm, openmpi; nullopt when none is (then a process with W > 1 becomes the supervisor).
// A launcher is chosen by its rank variable alone: Slurm sets SLURM_NTASKS in a whole
// allocation (an salloc shell), but SLURM_PROCID only in the tasks of a step.
// Its world variable must then be set too; a missing local rank defaults to the rank (one
// node). Throws InputError, naming the variable, for a value that is not a plain decimal
// number, a world of 0, a rank or local rank >= world, a missing world variable, or our own
// REDUCE_VERIFY_WORLD_SIZE / _LOCAL_RANK without REDUCE_VERIFY_RANK (half a rank contract is
// a mistake, never a request to self-spawn).
std::optional<LaunchRank> detect_launch_rank(const EnvLookup& env);

// The per-launch job id: REDUCE_VERIFY_JOB_ID, else SLURM_JOB_ID + "." + SLURM_STEP_ID
// (SLURM_JOB_ID alone outside a step), else TORCHELASTIC_RUN_ID (but not torchrun's
// default "none", which every launch shares), else OMPI_MCA_ess_base_jobid; nullopt when
// none is set (the caller refuses, or makes a fresh one when it is the supervisor). Empty
// values count as unset. Throws InputError, naming the variable, when the chosen value is not
// a valid job id.
std::optional<std::string> derive_job_id(const EnvLookup& env);

// A job id is one plain path segment: 1..128 characters of [A-Za-z0-9._-], not "." or "..".
// Throws InputError saying what is wrong otherwise.
void validate_job_id(const std::string& job_id);

// REDUCE_VERIFY_RENDEZVOUS (empty counts as unset).
std::optional<std::string> rendezvous_root(const EnvLookup& env);

}  // namespace rv
