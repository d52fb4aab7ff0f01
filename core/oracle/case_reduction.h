// A case's arenas and its reduced arena, computed from the case id alone.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "core/case_id.h"

namespace rv {

// Every rank's whole arena (W × N floats): for EmulatedWorld and the live transports.
std::vector<std::vector<float>> generate_case_arenas(const CaseId& id);

// The reduced arena (bf16/f16 values widened) by the straight ascending fold, streamed in consecutive blocks, so a
// case of any size needs only W × block floats of memory. `sink` sees the blocks in order.
using ReducedBlockSink = std::function<void(const float* values, std::size_t count)>;
void stream_reference_reduction(const CaseId& id, const ReducedBlockSink& sink);

}  // namespace rv
