// The subcommands, one file each (cmd_<name>.cc). Each setup_<name> adds its subcommand to
// the app; the subcommand's callback runs it and stores its exit code in exit_code.
// Errors are thrown and mapped to exit codes in main.
#pragma once

#include <CLI/CLI.hpp>

namespace rv {

void setup_golden(CLI::App& app, int& exit_code);
void setup_check(CLI::App& app, int& exit_code);
void setup_digest(CLI::App& app, int& exit_code);
void setup_info(CLI::App& app, int& exit_code);

}  // namespace rv
