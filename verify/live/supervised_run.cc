#include "verify/live/supervised_run.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "core/launch/supervisor.h"
#include "core/rendezvous/launcher_env.h"
#include "verify/common/exit_codes.h"
#include "verify/common/file_io.h"
#include "verify/common/progress.h"
#include "verify/common/raw_inputs.h"
#include "verify/live/loopback_run.h"
#include "verify/live/rendezvous.h"
#include "verify/live/run_report.h"
#include "verify/live/stale_runs.h"
#include "verify/live/transport_factory.h"

namespace rv {
namespace {

std::string self_executable() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw RuntimeFailure("cannot find this program's path: " + error.message());
  return path.string();
}

// $TMPDIR (else /tmp), as mkdtemp(3) users take it; a missing or unusable one is named.
std::string temporary_root() {
  const char* given = std::getenv("TMPDIR");
  const std::string dir = given && *given ? given : "/tmp";
  const std::string who = given && *given ? "TMPDIR=" + dir : dir;
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) {
    throw InputError(who + ": " + std::strerror(errno) +
                     " (the private rendezvous directory goes there; set TMPDIR to a writable "
                     "directory or give --rendezvous DIR)");
  }
  if (!S_ISDIR(info.st_mode)) throw InputError(who + ": not a directory");
  return dir;
}

// The supervisor's private rendezvous root, marked as its own while it lives
// (stale_runs.h) and removed with everything in it when the run ends.
class TemporaryDirectory {
 public:
  explicit TemporaryDirectory(const std::string& parent) {
    std::string pattern = parent + "/reduce-verify-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      const int error = errno;
      throw InputError(std::string(std::getenv("TMPDIR") ? "TMPDIR=" : "") + parent +
                       ": cannot create the rendezvous directory: " + std::strerror(error) +
                       " (set TMPDIR to a writable directory or give --rendezvous DIR)");
    }
    path_ = pattern;
    mark_.emplace(path_);
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
    mark_.reset();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::optional<SupervisorMark> mark_;
};

// The options a rank process must see: the supervisor's own, with the world and the
// transport pinned so every rank decides the same.
std::vector<std::string> rank_arguments(const std::vector<std::string>& args, std::uint32_t world,
                                        TransportKind transport) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // Drop the supervisor's own --world/--transport/--report/--junit/--job-id (value in the
    // next arg or after '='): the ranks get pinned ones (a job id per world, in their
    // environment), and only the supervisor writes reports.
    bool drop = false;
    for (const char* flag : {"--world", "--transport", "--report", "--junit", "--job-id"}) {
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
  out.push_back(to_string(transport));
  return out;
}

std::vector<CaseId> ids_of(const std::vector<PlannedCase>& cases) {
  std::vector<CaseId> ids;
  for (const PlannedCase& c : cases) ids.push_back(c.id);
  return ids;
}

std::string world_list(const std::vector<std::uint32_t>& worlds) {
  std::string text;
  for (std::uint32_t w : worlds) text += (text.empty() ? "" : ", ") + std::to_string(w);
  return text;
}

}  // namespace

int run_supervised(const RunOptions& options, const std::vector<std::string>& args) {
  const TransportKind transport = resolve_transport(options.transport, /*under_launcher=*/false);
  if (transport == TransportKind::kCudaLoopback) return run_cuda_loopback(options);

  std::vector<PlannedCase> cases;
  std::uint32_t input_world = 0;
  if (options.inputs.empty()) {
    cases = plan_cases(options);
  } else {
    check_raw_inputs(options.inputs, options.inputs_dtype());  // bad files are named here, before any rank starts
    input_world = static_cast<std::uint32_t>(options.inputs.size());
    // --world W < M files: M exact addends over W ranks (cmd_run.cc allows it under exact
    // only; rank_worker checks the contract again for ranks under a launcher).
    if (options.worlds.size() == 1 && options.worlds[0] < input_world) {
      input_world = options.worlds[0];
    }
  }
  const std::uint32_t max_world = options.max_world.value_or(default_max_world(transport));
  // --job-id names the run: world W rendezvouses under "<id>-w<W>" (checked here, before any
  // rank starts, so a too long one is refused by name, not by every rank).
  if (!options.job_id.empty()) {
    validate_job_id(options.job_id);
    try {
      validate_job_id(options.job_id + "-w" + std::to_string(kMaxWorld));
    } catch (const InputError& error) {
      throw InputError("--job-id " + options.job_id +
                       ": the supervisor names the directory of "
                       "world W '<id>-w<W>': " +
                       error.what());
    }
  }

  // From here a SIGINT or SIGTERM stops the whole run: the current world's ranks, and every
  // world not yet started (docs/DESIGN.md §6).
  const StopSignals signals;
  std::optional<TemporaryDirectory> temporary;
  std::string root = given_rendezvous_root(options, process_env()).value_or("");
  if (root.empty()) {
    const std::string parent = temporary_root();
    remove_stale_runs(parent, "reduce-verify-");  // what a killed supervisor left
    temporary.emplace(parent);
    root = temporary->path();
  } else {
    remove_stale_runs(root, "");
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
                                                 std::to_string(max_world) + " on " +
                                                 to_string(transport)));
          }
        }
        continue;
      }
      worlds.push_back({w, of_world});
    }
  }

  std::vector<WorldResults> results;
  std::vector<WorldFailure> failures;
  std::vector<std::uint32_t> not_run;
  const std::string program = self_executable();
  {
    Progress progress("run: worlds", worlds.size());  // cleared before the results print
    for (const auto& [w, of_world] : worlds) {
      if (signals.stop_signal() != 0) {
        not_run.push_back(w);
        continue;
      }
      const std::string job_id = options.job_id.empty() ? fresh_world_job_id(w)
                                                        : options.job_id + "-w" + std::to_string(w);
      const std::string job_dir = root + "/" + job_id;
      std::optional<SupervisorMark> mark;
      if (!temporary) mark.emplace(job_dir);
      RankProcessSpec spec;
      spec.argv.push_back(program);
      for (const std::string& a : rank_arguments(args, w, transport)) spec.argv.push_back(a);
      spec.world = w;
      spec.env = supervised_rank_env({root, job_id});
      const WorldOutcome outcome = run_rank_processes(spec, signals);
      progress.advance();
      const std::string world_file = job_dir + "/" + kWorldResultsFile;
      if (outcome.forwarded_signal != 0) {
        not_run.push_back(w);
      } else if (!outcome.ok()) {
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
      } else {
        try {
          const std::string text = read_file_bytes(world_file, std::uint64_t{1} << 30);
          results.push_back(world_results_from_json(nlohmann::json::parse(text)));
        } catch (const std::exception& error) {
          failures.push_back({w, std::string("rank 0 left no readable results: ") + error.what(),
                              kExitRuntimeFailure, ids_of(of_world)});
        }
      }
      // Every world's directory goes when the world is over, whether it passed or not (the
      // private root goes as a whole at the end).
      if (!temporary) {
        std::error_code ignored;
        std::filesystem::remove_all(job_dir, ignored);
      }
    }
  }
  if (const int signal = signals.stop_signal()) {
    std::cerr << "reduce-verify: run stopped by " << signal_name(signal) << "; "
              << (not_run.size() == 1 ? "the world of W = " : "the worlds of W = ")
              << world_list(not_run) << " did not finish; no report written"
              << (options.report_path.empty() && options.junit_path.empty()
                      ? ""
                      : " (an earlier one is left as it was)")
              << "\n";
    return 128 + signal;
  }
  return finish_run(options, results, skipped, failures);
}

}  // namespace rv
