// The C ABI's exact gradient accumulator on a GPU (rv_accumulator_create with device ≥ 0):
// core/cuda/accumulator/cuda_accumulator.h, which implements core/accumulator's interface.
#include <memory>

#include "capi/accumulator_handle.h"
#include "core/cuda/accumulator/cuda_accumulator.h"

namespace rv::capi {

std::unique_ptr<GradientAccumulator> make_cuda_accumulator(std::size_t count, int device) {
  return std::make_unique<CudaAccumulator>(device, count);
}

}  // namespace rv::capi
