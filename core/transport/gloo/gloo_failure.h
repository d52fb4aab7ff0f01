// The text of whatever Gloo threw, shared by the Gloo backend's files (gloo::Exception, the
// I/O errors, and gloo::EnforceNotMet, its failed checks, are unrelated classes: both must be
// caught). With it, the backend's files get the core's one way to wait (core/deadline.h):
// each operation's Deadline, fixed when it starts, and format_duration for its messages.
#pragma once

#include <string>

#include "core/deadline.h"

namespace rv {
namespace gloo_detail {

// The message of the exception being handled (gloo::EnforceNotMet, gloo::Exception, any
// std::exception); call only inside a catch block.
std::string current_exception_text();

}  // namespace gloo_detail
}  // namespace rv
