// reduce-verify: prove that multi-rank gradient reductions are bit-reproducible.
// main only wires the subcommands (one file each) and maps errors to exit codes.
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/fp_environment.h"
#include "verify/cli/commands.h"
#include "verify/common/exit_codes.h"
#include "verify/golden/fingerprint.h"

int main(int argc, char** argv) {
  CLI::App app(
      "reduce-verify: bit-reproducible multi-rank reduction, and the proof of it.\n"
      "Exit codes: 0 verified, 1 verification failure, 2 bad usage or input, 3 runtime "
      "failure.",
      "reduce-verify");
  app.set_version_flag("--version", rv::tool_identity());
  app.require_subcommand(1);
  // Usage errors are bad input like any other: one line on stderr that names the option
  // (CLI11's default adds a second "Run with --help" line).
  app.failure_message([](const CLI::App*, const CLI::Error& error) {
    return "reduce-verify: error: " + std::string(error.what()) + " (see --help)\n";
  });
  int exit_code = rv::kExitVerified;
  rv::setup_golden(app, exit_code);
  rv::setup_check(app, exit_code);
  rv::setup_digest(app, exit_code);
  rv::setup_info(app, exit_code);
#if defined(RV_HAVE_RUN)
  rv::setup_run(app, exit_code);
#endif
  rv::setup_compare(app, exit_code);
  rv::setup_audit(app, exit_code);
  rv::setup_replay(app, exit_code);
  rv::set_command_line_arguments(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);  // prints help, version or the usage error
    return code == 0 ? rv::kExitVerified : rv::kExitBadInput;
  } catch (...) {
    return rv::report_current_exception();
  }
  return exit_code;
}
