// The one-GPU loopback world for the exact contract (docs/DESIGN.md §2.4, transport
// cuda-loopback): all W logical ranks' arenas on one GPU, each rank's agreement words and
// digits computed by the exact kernels (core/cuda/exact_kernel.h), the W word buffers
// combined on the GPU as the library's int64 all-reduce would combine them (max for the
// agreement round, sum for the digits: integer, so order-free), and every rank rounding the
// same summed words into its own arena. It proves one GPU's exact arithmetic against the
// contract on any single GPU.
#pragma once

#include <vector>

#include "core/contract.h"

namespace rv {

// Reduces arenas (one per logical rank, equal lengths, 1 ≤ W ≤ 2^20) on `device` under the
// exact contract; returns every rank's reduced arena. Throws InputError for bad arenas,
// RuntimeFailure for device errors or impossible agreed windows.
std::vector<std::vector<float>> loopback_exact_all_reduce(
    const std::vector<std::vector<float>>& arenas, Op op, int device);

}  // namespace rv
