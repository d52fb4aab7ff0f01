#include "capi/last_error.h"

#include <exception>
#include <new>

namespace rv::capi {
namespace {

// One message per thread: a trainer may reduce buckets on several threads at once, and each
// must read its own failure.
thread_local std::string last_error_message;

void store(const char* function, const char* message) noexcept {
  try {
    last_error_message = std::string(function) + ": " + message;
  } catch (...) {
    last_error_message.clear();  // out of memory while reporting: the status still says it
  }
}

}  // namespace

void clear_last_error() noexcept { last_error_message.clear(); }

rv_status record_current_exception(const char* function) noexcept {
  try {
    throw;
  } catch (const Unsupported& e) {
    store(function, e.what());
    return RV_UNSUPPORTED;
  } catch (const InputError& e) {
    store(function, e.what());
    return RV_INPUT_ERROR;
  } catch (const RuntimeFailure& e) {
    store(function, e.what());
    return RV_RUNTIME_FAILURE;
  } catch (const InternalError& e) {
    store(function, (std::string("internal error (a bug in reduce-verify): ") + e.what()).c_str());
    return RV_INTERNAL_ERROR;
  } catch (const std::bad_alloc&) {
    store(function, "out of host memory");
    return RV_RUNTIME_FAILURE;
  } catch (const std::exception& e) {
    store(function, (std::string("internal error (a bug in reduce-verify): ") + e.what()).c_str());
    return RV_INTERNAL_ERROR;
  } catch (...) {
    store(function, "internal error (a bug in reduce-verify): an unknown exception");
    return RV_INTERNAL_ERROR;
  }
}

}  // namespace rv::capi

extern "C" const char* rv_last_error(void) { return rv::capi::last_error_message.c_str(); }
