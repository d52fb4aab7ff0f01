// run --transport cuda-loopback: every logical rank of every W on one GPU in this process,
// each a rank thread running the real reducers over the loopback transport
// (core/transport/cuda_loopback): device-to-device copies in shuffled delivery orders, the
// same reducers, kernels and slot layout as the multi-process path.
#pragma once

#include "verify/live/run_plan.h"

namespace rv {

// The loopback world on one GPU: every W in this process, no rank processes. Returns the
// exit code; throws RuntimeFailure without a GPU, InputError in a build without CUDA.
int run_cuda_loopback(const RunOptions& options);

}  // namespace rv
