#include "bench/cuda/read_probe.h"

#include <cuda_runtime.h>

#include <stdexcept>

namespace rv::bench {
namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerMultiprocessor = 8;

__global__ void __launch_bounds__(kThreads)
    read_probe_kernel(const float4* values, std::size_t quads, std::uint32_t* words) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::uint32_t acc = 0;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < quads; i += 4 * stride) {
    float4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = __ldcs(values + i + k * stride);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      acc |= __float_as_uint(v[k].x) | __float_as_uint(v[k].y) | __float_as_uint(v[k].z) |
             __float_as_uint(v[k].w);
    }
  }
  for (; i < quads; i += stride) {
    const float4 v = __ldcs(values + i);
    acc |= __float_as_uint(v.x) | __float_as_uint(v.y) | __float_as_uint(v.z) |
           __float_as_uint(v.w);
  }
  for (int offset = 16; offset > 0; offset /= 2) acc |= __shfl_xor_sync(0xFFFFFFFFu, acc, offset);
  if (threadIdx.x % 32 == 0) words[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = acc;
}

}  // namespace

void launch_read_probe(const float* values, std::size_t n, std::uint32_t* words,
                       void* cuda_stream) {
  int device = 0, multiprocessors = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device) !=
          cudaSuccess) {
    throw std::runtime_error("read probe: cannot read the device's multiprocessor count");
  }
  read_probe_kernel<<<multiprocessors * kBlocksPerMultiprocessor, kThreads, 0,
                      static_cast<cudaStream_t>(cuda_stream)>>>(
      reinterpret_cast<const float4*>(values), n / 4, words);
  if (cudaGetLastError() != cudaSuccess) throw std::runtime_error("read_probe_kernel launch");
}

}  // namespace rv::bench
