#include "verify/cli/commands.h"

namespace rv {
namespace {
std::vector<std::string>& arguments() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

void set_command_line_arguments(int argc, char** argv) {
  arguments().assign(argv + (argc > 0 ? 1 : 0), argv + argc);
}

const std::vector<std::string>& command_line_arguments() { return arguments(); }

}  // namespace rv
