#include "core/rendezvous/launcher_env.h"

#include <array>
#include <cstdlib>
#include <limits>
#include <utility>

#include "core/error.h"

namespace rv {
namespace {

struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* world;
  const char* local_rank;
};

// The order is the precedence: our own variables win, so a supervisor started inside a
// Slurm step or under torchrun still gives its children their own ranks.
constexpr std::array<LauncherVariables, 4> kLaunchers{{
    {"reduce-verify", kRankVariable, kWorldSizeVariable, kLocalRankVariable},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
}};

std::optional<std::string> non_empty(const EnvLookup& env, const std::string& name) {
  auto value = env(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

// Plain decimal digits only: no sign, no spaces, no hex, no trailing garbage, so "4 " or
// "-1" from a broken script is an error rather than a silently different world.
std::uint32_t parse_count(const std::string& name, const std::string& value) {
  if (value.empty() || value.size() > 10) {
    throw InputError(detail::concat(name, "=\"", value, "\" is not a rank or world size (",
                                    value.empty() ? "empty" : "too long", ")"));
  }
  std::uint64_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') {
      throw InputError(detail::concat(name, "=\"", value,
                                      "\" is not a rank or world size (decimal digits only)"));
    }
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (n > std::numeric_limits<std::uint32_t>::max()) {
    throw InputError(detail::concat(name, "=\"", value, "\" is out of range"));
  }
  return static_cast<std::uint32_t>(n);
}

LaunchRank read_launcher(const EnvLookup& env, const LauncherVariables& vars,
                         const std::string& rank_text) {
  LaunchRank launch;
  launch.launcher = vars.launcher;
  launch.rank = parse_count(vars.rank, rank_text);
  const auto world_text = env(vars.world);
  if (!world_text) {
    throw InputError(detail::concat(vars.rank, " is set (", rank_text, ") but ", vars.world,
                                    " is not: the ", vars.launcher, " rank contract needs both"));
  }
  launch.world = parse_count(vars.world, *world_text);
  if (launch.world == 0) {
    throw InputError(detail::concat(vars.world, "=0: a world has at least one rank"));
  }
  if (launch.rank >= launch.world) {
    throw InputError(detail::concat(vars.rank, "=", launch.rank, " is not below ", vars.world, "=",
                                    launch.world));
  }
  if (const auto local_text = env(vars.local_rank)) {
    launch.local_rank = parse_count(vars.local_rank, *local_text);
    if (launch.local_rank >= launch.world) {
      throw InputError(detail::concat(vars.local_rank, "=", launch.local_rank, " is not below ",
                                      vars.world, "=", launch.world));
    }
  } else {
    launch.local_rank = launch.rank;
  }
  return launch;
}

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

EnvLookup env_from_map(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    const auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
}

std::optional<LaunchRank> detect_launch_rank(const EnvLookup& env) {
  for (const auto& vars : kLaunchers) {
    if (const auto rank_text = env(vars.rank)) return read_launcher(env, vars, *rank_text);
  }
  for (const char* orphan : {kWorldSizeVariable, kLocalRankVariable}) {
    if (env(orphan)) {
      throw InputError(detail::concat(orphan, " is set but ", kRankVariable,
                                      " is not: set all of the rank contract or none (use "
                                      "--world W to start a world)"));
    }
  }
  return std::nullopt;
}

void validate_job_id(const std::string& job_id) {
  if (job_id.empty()) throw InputError("the job id is empty");
  if (job_id.size() > 128) {
    throw InputError(detail::concat("job id \"", job_id.substr(0, 32), "...\" has ", job_id.size(),
                                    " characters; at most 128 are allowed"));
  }
  if (job_id == "." || job_id == "..") {
    throw InputError(detail::concat("job id \"", job_id, "\" is not a directory name"));
  }
  for (char c : job_id) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
    if (!plain) {
      const unsigned code = static_cast<unsigned char>(c);
      throw InputError(detail::concat("job id \"", job_id, "\" has the character ",
                                      (code >= 0x20 && code < 0x7f) ? std::string(1, c) : "",
                                      " (code ", code,
                                      "); a job id is one path segment of A-Z a-z 0-9 . _ -"));
    }
  }
}

std::optional<std::string> derive_job_id(const EnvLookup& env) {
  const auto checked = [](const std::string& source, std::string id) {
    try {
      validate_job_id(id);
    } catch (const InputError& e) {
      throw InputError(detail::concat(source, ": ", e.what()));
    }
    return std::optional<std::string>(std::move(id));
  };
  if (auto id = non_empty(env, kJobIdVariable)) return checked(kJobIdVariable, *id);
  if (auto job = non_empty(env, "SLURM_JOB_ID")) {
    // Two steps of one allocation (two sruns) are two launches: the step id tells them apart.
    auto step = non_empty(env, "SLURM_STEP_ID");
    if (!step) step = non_empty(env, "SLURM_STEPID");
    if (step) return checked("SLURM_JOB_ID.SLURM_STEP_ID", *job + "." + *step);
    return checked("SLURM_JOB_ID", *job);
  }
  // torchrun's --rdzv-id defaults to "none" for every launch, so it names no launch at all.
  if (auto id = non_empty(env, "TORCHELASTIC_RUN_ID"); id && *id != "none") {
    return checked("TORCHELASTIC_RUN_ID", *id);
  }
  if (auto id = non_empty(env, "OMPI_MCA_ess_base_jobid")) {
    return checked("OMPI_MCA_ess_base_jobid", *id);
  }
  return std::nullopt;
}

std::optional<std::string> rendezvous_root(const EnvLookup& env) {
  return non_empty(env, kRendezvousVariable);
}

}  // namespace rv
