// The object behind the C ABI's rv_accumulator: a holder of core/accumulator's
// GradientAccumulator, a HostAccumulator (core/accumulator/host_accumulator.h) or a
// CudaAccumulator (core/cuda/accumulator/cuda_accumulator.h, made by make_cuda_accumulator in
// capi/cuda_accumulator.cc; capi/cuda_unavailable.cc without CUDA). The entry points
// (capi/accumulator.cc) check their arguments before they reach it.
#pragma once

#include <cstddef>
#include <memory>

#include "capi/reduce_verify_c.h"
#include "core/accumulator/gradient_accumulator.h"

struct rv_accumulator {
  std::unique_ptr<rv::GradientAccumulator> accumulator;
};

namespace rv::capi {
// Throws Unsupported in a library built without CUDA.
std::unique_ptr<GradientAccumulator> make_cuda_accumulator(std::size_t count, int device);
}  // namespace rv::capi
