// One rank of a live world (`run` under a launcher, or a child of the supervisor): connects
// the transport, agrees with its peers on what to run, reduces every case of its world,
// and hands its digests to rank 0 through the job directory; rank 0 decides the verdicts.
#pragma once

#include "core/rendezvous/launcher_env.h"
#include "verify/live/run_plan.h"

namespace rv {

// Runs this process's rank. Returns the process exit code; rank 0 of an external launch
// (no supervisor) also prints the results and writes the reports.
int run_as_rank(const RunOptions& options, const LaunchRank& launch);

}  // namespace rv
