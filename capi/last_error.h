// The C ABI's error channel: every entry point runs its body under `guarded`, which turns the
// library's exceptions (core/error.h) into an rv_status and keeps the message for
// rv_last_error(), per thread. The library throws; this is the one place the C ABI catches
// (CONTRIBUTING.md, Style: only `main` catches, and this is the C ABI's `main`).
#pragma once

#include <string>

#include "capi/reduce_verify_c.h"
#include "core/error.h"

namespace rv::capi {

// A CUDA entry point of a library built without CUDA.
class Unsupported : public Error {
 public:
  using Error::Error;
};

void clear_last_error() noexcept;
// Maps the in-flight exception to its status and stores "<function>: <message>".
rv_status record_current_exception(const char* function) noexcept;

template <typename Body>
rv_status guarded(const char* function, Body&& body) noexcept {
  clear_last_error();
  try {
    body();
    return RV_OK;
  } catch (...) {
    return record_current_exception(function);
  }
}

}  // namespace rv::capi
