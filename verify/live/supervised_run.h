// `run` with no launcher in the environment: this process is the supervisor. It spawns one
// world of W rank processes per distinct W of the selected cases (its direct children, who
// die with it), collects each world's verdicts from the job directory, and reports.
#pragma once

#include <string>
#include <vector>

#include "verify/live/run_plan.h"

namespace rv {

// `args` are the command-line arguments after the program name, passed on to every rank.
int run_supervised(const RunOptions& options, const std::vector<std::string>& args);

}  // namespace rv
