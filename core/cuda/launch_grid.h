// Grid sizes for the grid-stride kernels of core/cuda: as many blocks as the device keeps
// resident at once (multiprocessors × the kernel's blocks per multiprocessor, read from the
// device), never more than the work needs. Private to core/cuda.
#pragma once

#include <cstddef>

namespace rv::cuda_detail {

// `kernel` is the address of a __global__ function, launched on the current device with
// `threads` threads per block; `needed_blocks` is how many blocks would give every thread
// one unit of work. Returns at least 1.
unsigned resident_grid(const void* kernel, int threads, std::size_t needed_blocks);

}  // namespace rv::cuda_detail
