#include "verify/live/supervised_run.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "core/launch/launcher_env.h"
#include "core/launch/supervisor.h"
#include "verify/common/exit_codes.h"
#include "verify/common/file_io.h"
#include "verify/common/progress.h"
#include "verify/golden/raw_inputs.h"
#include "verify/live/loopback_run.h"
#include "verify/live/rendezvous.h"
#include "verify/live/run_report.h"
#include "verify/live/transport_factory.h"

namespace rv {
namespace {

std::string self_executable() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw RuntimeFailure("cannot find this program's path: " + error.message());
  return path.string();
}

class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "reduce-verify-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw RuntimeFailure("cannot create a rendezvous directory under /tmp");
    }
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The options a rank process must see: the supervisor's own, with the world and the
// transport pinned so every rank decides the same.
std::vector<std::string> rank_arguments(const std::vector<std::string>& args, std::uint32_t world,
                                        const std::string& transport) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // Drop the supervisor's own --world/--transport/--report/--junit (value in the next arg or
    // after '='): the ranks get pinned ones, and only the supervisor writes reports.
    bool drop = false;
    for (const char* flag : {"--world", "--transport", "--report", "--junit"}) {
      const std::string f = flag;
      if (a == f) {
        drop = true;
        ++i;
      } else if (a.rfind(f + "=", 0) == 0) {
        drop = true;
      }
    }
    if (!drop) out.push_back(a);
  }
  out.push_back("--world");
  out.push_back(std::to_string(world));
  out.push_back("--transport");
  out.push_back(transport);
  return out;
}

std::vector<CaseId> ids_of(const std::vector<PlannedCase>& cases) {
  std::vector<CaseId> ids;
  for (const PlannedCase& c : cases) ids.push_back(c.id);
  return ids;
}

}  // namespace

int run_supervised(const RunOptions& options, const std::vector<std::string>& args) {
  const std::string transport = resolve_transport(options.transport, /*under_launcher=*/false);
  if (transport == "cuda-loopback") return run_cuda_loopback(options);

  std::vector<PlannedCase> cases;
  std::uint32_t input_world = 0;
  if (options.inputs.empty()) {
    cases = plan_cases(options);
  } else {
    check_raw_inputs(options.inputs);  // bad files are named here, before any rank starts
    input_world = static_cast<std::uint32_t>(options.inputs.size());
    // --world W < M files: M exact addends over W ranks (rank_worker checks the contract).
    if (options.worlds.size() == 1 && options.worlds[0] < input_world) {
      if (options.inputs_contract() != Contract::kExact) {
        throw InputError("run --inputs: " + std::to_string(input_world) + " files over " +
                         std::to_string(options.worlds[0]) +
                         " ranks needs --contract exact (fixed-order replays one file per rank)");
      }
      input_world = options.worlds[0];
    }
  }
  const std::uint32_t max_world = options.max_world.value_or(default_max_world(transport));

  std::optional<TemporaryDirectory> temporary;
  std::string root = given_rendezvous_root(options, process_env()).value_or("");
  if (root.empty()) {
    temporary.emplace();
    root = temporary->path();
  }

  std::vector<std::pair<std::uint32_t, std::vector<PlannedCase>>> worlds;
  std::vector<CaseResult> skipped;
  if (input_world) {
    worlds.push_back({input_world, {}});
  } else {
    for (auto& [w, of_world] : group_by_world(cases)) {
      if (w > max_world) {
        for (const PlannedCase& c : of_world) {
          for (Contract contract : options.contracts()) {
            skipped.push_back(skipped_result(c.id, contract,
                                             "W = " + std::to_string(w) + " is above --max-world " +
                                                 std::to_string(max_world) + " on " + transport));
          }
        }
        continue;
      }
      worlds.push_back({w, of_world});
    }
  }

  std::vector<WorldResults> results;
  std::vector<WorldFailure> failures;
  const std::string program = self_executable();
  {
    Progress progress("run: worlds", worlds.size());  // cleared before the results print
    for (const auto& [w, of_world] : worlds) {
      const std::string job_id = fresh_world_job_id(w);
      RankProcessSpec spec;
      spec.argv.push_back(program);
      for (const std::string& a : rank_arguments(args, w, transport)) spec.argv.push_back(a);
      spec.world = w;
      spec.env = supervised_rank_env({root, job_id});
      const WorldOutcome outcome = run_rank_processes(spec);
      progress.advance();
      const std::string world_file = root + "/" + job_id + "/" + kWorldResultsFile;
      if (!outcome.ok()) {
        WorldFailure failure;
        failure.world = w;
        failure.what = outcome.describe();
        // A rank that refused its input (exit 2) makes the run a bad-input run; anything else
        // (a death, a deadline, a signal) is a runtime failure.
        const bool bad_input = outcome.first_failure && outcome.first_failure->exited &&
                               outcome.first_failure->code == kExitBadInput;
        failure.exit_code = bad_input ? kExitBadInput : kExitRuntimeFailure;
        failure.cases = ids_of(of_world);
        failures.push_back(failure);
        continue;
      }
      try {
        const std::string text = read_file_bytes(world_file, std::uint64_t{1} << 30);
        results.push_back(world_results_from_json(nlohmann::json::parse(text)));
      } catch (const std::exception& error) {
        failures.push_back({w, std::string("rank 0 left no readable results: ") + error.what(),
                            kExitRuntimeFailure, ids_of(of_world)});
      }
      if (!temporary) {
        std::error_code ignored;
        std::filesystem::remove_all(root + "/" + job_id, ignored);
      }
    }
  }
  return finish_run(options, results, skipped, failures);
}

}  // namespace rv
