// Elementwise dtype passes on a GPU (docs/DESIGN.md §2.5), the very expressions of
// core/dtype_law.h: rounding widened values to bf16/f16 in place (the fixed-order contract's
// last step), and moving between widened binary32 and the dtype's own 2-byte elements (the
// library-sum contract hands those to NCCL). No CUDA types here.
#pragma once

#include <cstddef>

#include "core/dtype.h"

namespace rv {

// Each enqueued on `cuda_stream` (a cudaStream_t of the current device; nullptr for the
// default stream), n elements, any alignment of 4 (floats) and 2 (halves). f32 is a no-op for
// the rounding and a copy for the others. Throw RuntimeFailure when a launch fails.
void launch_round_to_dtype(float* d_values, std::size_t n, DType dtype, void* cuda_stream);
void launch_narrow(const float* d_values, std::size_t n, DType dtype, void* d_out,
                   void* cuda_stream);
void launch_widen(const void* d_values, std::size_t n, DType dtype, float* d_out,
                  void* cuda_stream);

}  // namespace rv
