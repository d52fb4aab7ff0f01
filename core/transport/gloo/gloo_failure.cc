#include "core/transport/gloo/gloo_failure.h"

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include <exception>

namespace rv {
namespace gloo_detail {

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
