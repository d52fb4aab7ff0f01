#include "bench/cuda/l2_flush.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "bench/cuda/harness.h"

namespace rv::bench {
namespace {

constexpr int kThreads = 256;

// Reads every 16 bytes of the scratch buffer (plain loads, so the lines are allocated in L2
// and push out what was there). The sink is written only if the OR of everything read is a
// value the zeroed buffer never holds, which keeps the loads from being dropped.
__global__ void __launch_bounds__(kThreads)
    flush_kernel(const uint4* scratch, std::size_t quads, std::uint32_t* sink) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::uint32_t acc = 0;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < quads;
       i += stride) {
    const uint4 v = scratch[i];
    acc |= v.x | v.y | v.z | v.w;
  }
  if (acc == 0xFFFFFFFFu) *sink = acc;
}

}  // namespace

L2Flush::L2Flush() {
  int device = 0, l2 = 0, multiprocessors = 0;
  check(cudaGetDevice(&device), "L2 flush: device");
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "L2 flush: L2 size");
  check(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device),
        "L2 flush: multiprocessors");
  blocks_ = static_cast<unsigned>(multiprocessors) * 8;
  bytes_ = std::max<std::size_t>(std::size_t{64} << 20, 4 * static_cast<std::size_t>(l2));
  bytes_ = bytes_ / 16 * 16;
  check(cudaMalloc(&scratch_, bytes_), "L2 flush: scratch");
  check(cudaMemset(scratch_, 0, bytes_), "L2 flush: scratch");
  check(cudaMalloc(&sink_, sizeof(std::uint32_t)), "L2 flush: sink");
  check(cudaDeviceSynchronize(), "L2 flush: set-up");
}

L2Flush::~L2Flush() {
  cudaFree(scratch_);
  cudaFree(sink_);
}

void L2Flush::enqueue(void* cuda_stream) const {
  flush_kernel<<<blocks_, kThreads, 0, static_cast<cudaStream_t>(cuda_stream)>>>(
      static_cast<const uint4*>(scratch_), bytes_ / 16, static_cast<std::uint32_t*>(sink_));
  check(cudaGetLastError(), "L2 flush: launch");
}

}  // namespace rv::bench
