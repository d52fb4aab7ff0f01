// Starting one rank process for the supervisor: fork, then in the child reset the
// supervisor's signal handlers, ask for SIGKILL when the supervisor dies (PR_SET_PDEATHSIG)
// and exec the rank program with its environment. After fork the child may only make
// async-signal-safe calls, so everything it needs (path, arguments, environment) is built in
// the parent first.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/launch/supervisor.h"

namespace rv::launch_detail {

// The program's path: `program` itself when it has a '/', else the first executable of that
// name in PATH. Throws RuntimeFailure when there is none.
std::string resolve_program(const std::string& program);

// Rank `rank`'s complete environment: the supervisor's own, with spec.env and the rank
// contract (REDUCE_VERIFY_RANK/_WORLD_SIZE/_LOCAL_RANK, set last) added or replacing.
std::vector<std::string> rank_environment(const RankProcessSpec& spec, std::uint32_t rank);

// Forks rank `rank` and returns its pid once it has exec'd `program` (the exec-error pipe
// closes on exec). Throws RuntimeFailure naming the rank when fork or exec failed (a child
// that could not exec is reaped first).
pid_t start_rank(const std::string& program, std::vector<std::string>& argv,
                 std::vector<std::string>& env, std::uint32_t rank);

}  // namespace rv::launch_detail
