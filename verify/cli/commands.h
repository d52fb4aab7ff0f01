// The subcommands, one file each (cmd_<name>.cc). Each setup_<name> adds its subcommand to
// the app; the subcommand's callback runs it and stores its exit code in exit_code.
// Errors are thrown and mapped to exit codes in main.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace rv {

void setup_golden(CLI::App& app, int& exit_code);
void setup_check(CLI::App& app, int& exit_code);
void setup_digest(CLI::App& app, int& exit_code);
void setup_info(CLI::App& app, int& exit_code);
void setup_run(CLI::App& app, int& exit_code);
void setup_compare(CLI::App& app, int& exit_code);
void setup_audit(CLI::App& app, int& exit_code);
void setup_replay(CLI::App& app, int& exit_code);

// The arguments after the program name, as main received them (the supervisor passes them
// on to the rank processes it spawns).
void set_command_line_arguments(int argc, char** argv);
const std::vector<std::string>& command_line_arguments();

}  // namespace rv
