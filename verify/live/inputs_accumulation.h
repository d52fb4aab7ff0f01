// `run --inputs` with more files than ranks (docs/DESIGN.md §11): the M files are M addends,
// rank r holds files r, r + W, r + 2W, …, adds them into an exact accumulator
// (core/exact/exact_accumulator.h) and the ranks combine through the transport's int64
// all-reduces, so the result is the exact sum (or mean over M) of all M files, as `digest
// --contract exact --inputs` over the same files prints it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/contract.h"
#include "core/transport/transport.h"

namespace rv {

// Every rank calls it with the same files; host-memory transports only (Gloo): a device
// transport's int64 all-reduce (NCCL) takes device memory, an InputError here.
std::vector<float> reduce_inputs_accumulated(Transport& transport,
                                             const std::vector<std::string>& files,
                                             std::uint32_t rank, std::uint32_t world, Op op);

}  // namespace rv
