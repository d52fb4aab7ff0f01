#include "core/cuda/launch_grid.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "core/cuda/cuda_check.h"

namespace rv::cuda_detail {
namespace {

// The occupancy query costs microseconds; a fold is launched once per owner and case, so the
// answer is kept per (kernel, device).
std::size_t resident_blocks(const void* kernel, int threads) {
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, std::size_t> cache;
  int device = 0;
  RV_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(kernel, device);
  const auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  int multiprocessors = 0;
  RV_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  int per_multiprocessor = 0;
  RV_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel, threads, 0));
  const std::size_t blocks = static_cast<std::size_t>(std::max(multiprocessors, 1)) *
                             static_cast<std::size_t>(std::max(per_multiprocessor, 1));
  cache.emplace(key, blocks);
  return blocks;
}

}  // namespace

unsigned resident_grid(const void* kernel, int threads, std::size_t needed_blocks) {
  const std::size_t blocks = std::min(resident_blocks(kernel, threads), needed_blocks);
  return static_cast<unsigned>(std::max<std::size_t>(blocks, 1));
}

}  // namespace rv::cuda_detail
