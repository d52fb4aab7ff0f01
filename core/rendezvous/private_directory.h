// A directory only this process's user can use: the job directory and the Gloo store in it
// (docs/DESIGN.md §10). Whoever can read them can join the world, and whoever can write
// them can forge its records, so both are created 0700 and refused when they are not.
#pragma once

#include <string>

namespace rv {

// Throws RuntimeFailure unless `dir` is a directory (not a symbolic link) owned by the
// effective user with no permission bit for group or others. `what` names it in the message
// ("the job directory", "the gloo store").
void require_private_directory(const std::string& dir, const std::string& what);

// "0755", for messages.
std::string mode_text(unsigned mode);

}  // namespace rv
