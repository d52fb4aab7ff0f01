#include "core/transport/gloo/gloo_failure.h"

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include <exception>
#include <sstream>

namespace rv {
namespace gloo_detail {

std::chrono::milliseconds Deadline::remaining() const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now());
  return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

std::string format_duration(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  std::ostringstream out;
  if (ms < 1000) {
    out << ms << " ms";
  } else if (ms % 1000 == 0) {
    out << ms / 1000 << " s";
  } else {
    out << ms / 1000 << "." << (ms % 1000) / 100 << " s";
  }
  return out.str();
}

std::string current_exception_text() {
  try {
    throw;
  } catch (const ::gloo::EnforceNotMet& e) {
    return std::string("Gloo check failed: ") + e.what();
  } catch (const ::gloo::Exception& e) {
    return e.what();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace gloo_detail
}  // namespace rv
