// A read-only probe for bench_cuda_exact: how fast this device streams values in when a
// kernel only reads them (the agreement kernel's traffic, with next to no arithmetic), so
// the agreement's copy_fraction can be read against what reading alone reaches.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rv::bench {

// ORs the bits of n floats (n a multiple of 4, `values` 16-byte aligned) into one word per
// warp at `words` (grid-stride over eight blocks per multiprocessor, float4 streaming loads,
// four per lane in flight), at most 64 words per multiprocessor of the current device.
void launch_read_probe(const float* values, std::size_t n, std::uint32_t* words,
                       void* cuda_stream);

}  // namespace rv::bench
