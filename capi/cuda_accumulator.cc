// The C ABI's exact gradient accumulator on a GPU (rv_accumulator_create with device ≥ 0).
#include "capi/accumulator_handle.h"
#include "capi/last_error.h"

namespace rv::capi {
std::unique_ptr<rv_accumulator> make_cuda_accumulator(std::size_t, int) {
  throw Unsupported("rv_accumulator_create: the GPU accumulator is not built yet");
}
}  // namespace rv::capi
