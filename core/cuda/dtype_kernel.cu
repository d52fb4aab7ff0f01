// One thread an element, grid-stride: these passes touch each value once and are not on a
// benchmarked path (the fold and exact kernels of halves read the 2-byte elements themselves).
#include "core/cuda/dtype_kernel.h"

#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/launch_grid.h"
#include "core/dtype_law.h"
#include "core/error.h"

namespace rv {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    round_kernel(float* values, std::size_t n, DType dtype) {
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += threads) {
    values[i] = round_to_dtype(dtype, values[i]);
  }
}

__global__ void __launch_bounds__(kThreads)
    narrow_kernel(const float* values, std::size_t n, DType dtype, std::uint16_t* out) {
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += threads) {
    out[i] = half_bits(dtype, values[i]);
  }
}

__global__ void __launch_bounds__(kThreads)
    widen_kernel(const std::uint16_t* values, std::size_t n, DType dtype, float* out) {
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += threads) {
    out[i] = widen_half(dtype, values[i]);
  }
}

unsigned blocks_for(const void* kernel, std::size_t n) {
  return cuda_detail::resident_grid(kernel, kThreads, (n + kThreads - 1) / kThreads);
}

}  // namespace

void launch_round_to_dtype(float* d_values, std::size_t n, DType dtype, void* cuda_stream) {
  if (n == 0 || dtype == DType::kF32) return;
  if (d_values == nullptr) throw InputError("launch_round_to_dtype: null device pointer");
  round_kernel<<<blocks_for(reinterpret_cast<const void*>(round_kernel), n), kThreads, 0,
                 static_cast<cudaStream_t>(cuda_stream)>>>(d_values, n, dtype);
  RV_CUDA_CHECK_LAUNCH("round_kernel");
}

void launch_narrow(const float* d_values, std::size_t n, DType dtype, void* d_out,
                   void* cuda_stream) {
  if (n == 0) return;
  if (d_values == nullptr || d_out == nullptr) throw InputError("launch_narrow: null pointer");
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  if (dtype == DType::kF32) {
    RV_CUDA_CHECK(cudaMemcpyAsync(d_out, d_values, n * sizeof(float), cudaMemcpyDeviceToDevice,
                                  stream));
    return;
  }
  narrow_kernel<<<blocks_for(reinterpret_cast<const void*>(narrow_kernel), n), kThreads, 0,
                  stream>>>(d_values, n, dtype, static_cast<std::uint16_t*>(d_out));
  RV_CUDA_CHECK_LAUNCH("narrow_kernel");
}

void launch_widen(const void* d_values, std::size_t n, DType dtype, float* d_out,
                  void* cuda_stream) {
  if (n == 0) return;
  if (d_values == nullptr || d_out == nullptr) throw InputError("launch_widen: null pointer");
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  if (dtype == DType::kF32) {
    RV_CUDA_CHECK(cudaMemcpyAsync(d_out, d_values, n * sizeof(float), cudaMemcpyDeviceToDevice,
                                  stream));
    return;
  }
  widen_kernel<<<blocks_for(reinterpret_cast<const void*>(widen_kernel), n), kThreads, 0,
                 stream>>>(static_cast<const std::uint16_t*>(d_values), n, dtype, d_out);
  RV_CUDA_CHECK_LAUNCH("widen_kernel");
}

}  // namespace rv
