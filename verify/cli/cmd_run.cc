// reduce-verify run: live multi-rank reductions against the golden digests (docs/DESIGN.md §5,
// §6). Under a launcher this process is one rank; with none it is the supervisor of the
// worlds it spawns (or, on cuda-loopback, all ranks of one GPU at once).
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp_environment.h"
#include "core/rendezvous/launcher_env.h"
#include "verify/cli/commands.h"
#include "verify/golden/case_matrix.h"
#include "verify/common/exit_codes.h"
#include "verify/common/output_file.h"
#include "verify/live/rank_worker.h"
#include "verify/live/rendezvous.h"
#include "verify/live/stale_runs.h"
#include "verify/live/supervised_run.h"

namespace rv {
namespace {

// The names of a table's entries, for CLI::IsMember (whose message then lists them).
template <typename Enum>
std::vector<std::string> names_of(const std::map<std::string, Enum>& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.push_back(entry.first);
  return names;
}

struct RunCommand {
  RunOptions options;
  std::string transport = "auto", contract = "all";  // parsed into options in run_run
  std::vector<std::string> args;  // the whole command line after the program name
  std::uint32_t max_world = 0;
  bool clean = false;
};

// CLI11's range check reads a word that is no number as out of range; this says what it is.
CLI::Validator number_of(const std::string& what) {
  return CLI::Validator(
      [what](std::string& text) -> std::string {
        double value = 0;
        if (CLI::detail::lexical_cast(text, value)) return "";
        return "'" + text + "' is not a number (" + what + ")";
      },
      "", "number");
}

// `--world 2 3` reads, to CLI11, as the list 2, 3; the ranks would take the 3 as a stray
// argument. One list per --world, comma-separated, is the only spelling.
void refuse_spaced_world_list(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i + 2 < args.size(); ++i) {
    if (args[i] != "--world") continue;
    const std::string& next = args[i + 2];
    if (!next.empty() && next[0] != '-') {
      throw InputError("--world " + args[i + 1] + " " + next +
                       ": one comma-separated list, e.g. --world " + args[i + 1] + "," + next +
                       " (stray argument '" + next + "')");
    }
  }
}

int clean_stale_runs(const RunOptions& options) {
  std::vector<std::string> removed;
  const char* tmpdir = std::getenv("TMPDIR");
  for (const std::string& dir :
       remove_stale_runs(tmpdir && *tmpdir ? tmpdir : "/tmp", "reduce-verify-")) {
    removed.push_back(dir);
  }
  if (const auto root = given_rendezvous_root(options, process_env())) {
    for (const std::string& dir : remove_stale_runs(*root, "")) removed.push_back(dir);
  }
  for (const std::string& dir : removed) std::cout << "removed " << dir << "\n";
  std::cout << removed.size() << " stale run directories removed\n";
  return kExitVerified;
}

int run_run(RunCommand& command) {
  enforce_ieee_fp_environment();
  RunOptions& options = command.options;
  options.transport = transport_choice_names().at(command.transport);
  options.contract = contract_selection_names().at(command.contract);
  if (command.clean) return clean_stale_runs(options);
  refuse_spaced_world_list(command.args);
  if (command.max_world) options.max_world = command.max_world;
  if (options.iters < 1) throw InputError("--iters must be at least 1");
  if (!(options.timeout_seconds > 0)) throw InputError("--timeout must be positive");
  if (!options.inputs.empty()) {
    options.inputs_contract();  // refuses library-sum
    if (options.dtypes.size() > 1) throw InputError("run --inputs: give one --dtype");
    const std::uint32_t files = static_cast<std::uint32_t>(options.inputs.size());
    // One file per rank, or (exact only) M files accumulated over fewer ranks.
    const bool one_world = options.worlds.size() == 1;
    const bool spread = one_world && options.worlds[0] < files &&
                        options.inputs_contract() == Contract::kExact;
    if (one_world && options.worlds[0] < files && !spread) {
      throw InputError("run --inputs: " + std::to_string(files) + " files over " +
                       std::to_string(options.worlds[0]) +
                       " ranks needs --contract exact (fixed-order replays one file per rank)");
    }
    if (!options.worlds.empty() && !(one_world && options.worlds[0] == files) && !spread) {
      std::string worlds;
      for (std::uint32_t w : options.worlds)
        worlds += (worlds.empty() ? "" : ",") + std::to_string(w);
      throw InputError("--world " + worlds + " does not match --inputs: " + std::to_string(files) +
                       " files, one per rank (W = " + std::to_string(files) +
                       "), or under --contract exact fewer ranks than files");
    }
  }
  const std::optional<LaunchRank> launch = detect_launch_rank(process_env());
  // The outputs are checked before any rank starts, by the process that writes them (the
  // supervisor, or rank 0 of an external launch), so a path that cannot be written fails now.
  if (!launch || launch->rank == 0) {
    if (!options.report_path.empty()) check_output_path(options.report_path, "--report");
    if (!options.junit_path.empty()) check_output_path(options.junit_path, "--junit");
  }
  if (launch) return run_as_rank(options, *launch);
  return run_supervised(options, command.args);
}

}  // namespace

void setup_run(CLI::App& app, int& exit_code) {
  auto command = std::make_shared<RunCommand>();
  RunOptions& o = command->options;
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run live multi-rank reductions of the golden cases (default: the committed suite, "
      "embedded in this binary) and verify their bits. With no launcher in the environment "
      "this process spawns one world of rank processes per W; under mpirun, srun or torchrun "
      "each process is one rank (give --rendezvous DIR and a job id).");
  cmd->add_option("--transport", command->transport,
                  "auto | gloo | nccl | cuda-loopback (default auto)")
      ->check(CLI::IsMember(names_of(transport_choice_names())));
  cmd->add_option("--contract", command->contract,
                  "fixed-order | library-sum | exact | both (fixed-order and library-sum) | all "
                  "(the three; default all)")
      ->check(CLI::IsMember(names_of(contract_selection_names())));
  cmd->add_option("--golden", o.golden_files, "golden files (default: the embedded suite)");
  cmd->add_option("--case", o.case_ids,
                  "run only this case id (repeatable; its data: --contract chooses what runs)");
  cmd->add_option("--world", o.worlds, "run only the cases of these world sizes, e.g. 2,3,8")
      ->delimiter(',')
      ->check(number_of("a world size"))
      ->check(CLI::Range(1u, kMaxWorld));
  cmd->add_option("--max-world", command->max_world,
                  "skip (and count) cases of larger W (default: 8 on gloo, the GPU count on nccl)")
      ->check(number_of("a world size"))
      ->check(CLI::Range(1u, kMaxWorld));
  cmd->add_option("--iters", o.iters, "repeat every reduction K times; all must agree (default 1)")
      ->check(number_of("a count"))
      ->check(CLI::Range(1u, 1000u));
  cmd->add_option("--timeout", o.timeout_seconds,
                  "deadline in seconds for every blocking wait (default 60)")
      ->check(number_of("seconds"))
      ->check(CLI::Range(0.1, 86400.0));
  cmd->add_option("--report", o.report_path, "write the JSON report here");
  cmd->add_option("--junit", o.junit_path, "write a JUnit XML file here");
  cmd->add_option("--inputs", o.inputs,
                  "raw little-endian files of --dtype, file r = rank r: reduce them live (under fixed-order, or "
                  "exact with --contract exact) and compare with the reference; prints the line "
                  "`digest --inputs` prints. Under exact, --world W below the file count M "
                  "spreads the M files over W ranks (rank r: files r, r + W, ...), accumulated "
                  "exactly");
  cmd->add_option("--op", o.op, "with --inputs: sum or mean (default sum)")
      ->check(CLI::IsMember({"sum", "mean"}));
  add_dtype_option(*cmd, o.dtypes,
                   "run only the cases of these dtypes, e.g. bf16,f16 (default: all; a case id "
                  "names its dtype as dtype=bf16, none for f32); with --inputs the files' one "
                  "element type (default f32)");
  cmd->add_option("--coll", o.coll,
                  "run only the cases of this collective: all-reduce or reduce-scatter (default: "
                  "both; a case id names a reduce-scatter as coll=reduce-scatter); with --inputs "
                  "the collective run (default all-reduce)")
      ->check(CLI::IsMember({"all-reduce", "reduce-scatter"}));
  cmd->add_option("--rendezvous", o.rendezvous,
                  "shared directory for rendezvous (default: REDUCE_VERIFY_RENDEZVOUS, or a "
                  "private temporary one when this process spawns the ranks)");
  cmd->add_option("--job-id", o.job_id,
                  "per-launch job id (default: REDUCE_VERIFY_JOB_ID, SLURM_JOB_ID.SLURM_STEP_ID, "
                  "TORCHELASTIC_RUN_ID or OMPI_MCA_ess_base_jobid)");
  cmd->add_option("--hostname", o.hostname,
                  "gloo: the address this rank binds, one of its own host's (default auto: the "
                  "ranks agree through the job directory; 127.0.0.1 when all share one network "
                  "namespace, else each rank's first address that shares a subnet with every "
                  "other host's; none is an error naming the rank)");
  cmd->add_flag("--accuracy", o.accuracy,
                "rank 0 also measures every fixed-order and library-sum result against the "
                "exact contract's (differing elements, max and mean ulp) for the report");
  cmd->add_flag("--clean", command->clean,
                "only remove what killed supervisors of this user left (their private rendezvous "
                "directories under TMPDIR, their job directories under --rendezvous), then exit; "
                "every supervised run does this too when it starts");
  cmd->callback([command, &exit_code] {
    command->args = command_line_arguments();
    exit_code = run_run(*command);
  });
}

}  // namespace rv
