// reduce-verify run: live multi-rank reductions against the golden digests (docs/DESIGN.md §5,
// §6). Under a launcher this process is one rank; with none it is the supervisor of the
// worlds it spawns (or, on cuda-loopback, all ranks of one GPU at once).
#include <iostream>
#include <memory>

#include "core/error.h"
#include "core/fp_environment.h"
#include "core/launch/launcher_env.h"
#include "verify/cli/commands.h"
#include "verify/live/rank_worker.h"
#include "verify/live/supervised_run.h"

namespace rv {
namespace {

struct RunCommand {
  RunOptions options;
  std::vector<std::string> args;  // the whole command line after the program name
  std::uint32_t max_world = 0;
};

int run_run(RunCommand& command) {
  enforce_ieee_fp_environment();
  RunOptions& options = command.options;
  if (command.max_world) options.max_world = command.max_world;
  if (options.iters < 1) throw InputError("--iters must be at least 1");
  if (!(options.timeout_seconds > 0)) throw InputError("--timeout must be positive");
  options.contracts();  // validates --contract
  if (!options.inputs.empty()) options.inputs_contract();
  const std::optional<LaunchRank> launch = detect_launch_rank(process_env());
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
  cmd->add_option("--transport", o.transport, "auto | gloo | nccl | cuda-loopback (default auto)")
      ->check(CLI::IsMember({"auto", "gloo", "nccl", "cuda-loopback"}));
  cmd->add_option("--contract", o.contract,
                  "fixed-order | library-sum | exact | both (fixed-order and library-sum) | all "
                  "(the three; default all)")
      ->check(CLI::IsMember({"fixed-order", "library-sum", "exact", "both", "all"}));
  cmd->add_option("--golden", o.golden_files, "golden files (default: the embedded suite)");
  cmd->add_option("--case", o.case_ids,
                  "run only this case id (repeatable; its data: --contract chooses what runs)");
  cmd->add_option("--world", o.worlds, "run only the cases of these world sizes, e.g. 2,3,8")
      ->delimiter(',')
      ->check(CLI::Range(1u, kMaxWorld));
  cmd->add_option("--max-world", command->max_world,
                  "skip (and count) cases of larger W (default: 8 on gloo, the GPU count on nccl)")
      ->check(CLI::Range(1u, kMaxWorld));
  cmd->add_option("--iters", o.iters, "repeat every reduction K times; all must agree (default 1)")
      ->check(CLI::Range(1u, 1000u));
  cmd->add_option("--timeout", o.timeout_seconds,
                  "deadline in seconds for every blocking wait (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  cmd->add_option("--report", o.report_path, "write the JSON report here");
  cmd->add_option("--junit", o.junit_path, "write a JUnit XML file here");
  cmd->add_option("--inputs", o.inputs,
                  "raw binary32 files, file r = rank r: reduce them live (under fixed-order, or "
                  "exact with --contract exact) and compare with the emulation; prints the line "
                  "`digest --inputs` prints. Under exact, --world W below the file count M "
                  "spreads the M files over W ranks (rank r: files r, r + W, ...), accumulated "
                  "exactly");
  cmd->add_option("--op", o.op, "with --inputs: sum or mean (default sum)")
      ->check(CLI::IsMember({"sum", "mean"}));
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
  cmd->callback([command, &exit_code] {
    command->args = command_line_arguments();
    exit_code = run_run(*command);
  });
}

}  // namespace rv
