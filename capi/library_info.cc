// What the C ABI says about itself: its version (the Python package checks it), whether CUDA
// is built in, and one line for reports.
#include <string>

#include "capi/reduce_verify_c.h"
#include "core/build_info/build_info.h"
#include "core/digest/digest.h"

extern "C" int rv_api_version(void) { return RV_C_API_VERSION; }

extern "C" int rv_built_with_cuda(void) {
#ifdef RV_HAVE_CUDA
  return 1;
#else
  return 0;
#endif
}

extern "C" const char* rv_library_info(void) {
  static const std::string info =
      rv::build_info::tool_identity() + ", C API " + std::to_string(RV_C_API_VERSION) + ", CUDA " +
      (rv_built_with_cuda() ? "yes" : "no") + ", " + rv::xxhash_version();
  return info.c_str();
}
