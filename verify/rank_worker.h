// One rank of a live world (`run` under a launcher, or a child of the supervisor): connects
// the transport, agrees with its peers on what to run, reduces every case of its world,
// and hands its digests to rank 0 through the job directory; rank 0 decides the verdicts.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/launch/launcher_env.h"
#include "verify/run_plan.h"
#include "verify/run_results.h"

namespace rv {

// What rank 0 of a world concluded: the verdicts, and the transport facts for the report.
struct WorldResults {
  std::uint32_t world = 0;
  std::string transport;
  std::string transport_library;
  std::string device;
  std::vector<CaseResult> results;
  // --inputs runs: the emulation's digest, for the `digest`-style output line.
  std::string inputs_line;
};

nlohmann::json to_json(const WorldResults& world);
WorldResults world_results_from_json(const nlohmann::json& json);  // throws InputError

// The job directory file rank 0 writes its WorldResults to.
inline constexpr const char* kWorldResultsFile = "world-results.json";

// Runs this process's rank. Returns the process exit code; rank 0 of an external launch
// (no supervisor) also prints the results and writes the reports.
int run_as_rank(const RunOptions& options, const LaunchRank& launch);

}  // namespace rv
