// What the CUDA benchmarks share: their timing constants (warm-up launches, then timed
// iterations whose median is reported), a CUDA status check, and the median itself.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace rv::bench {

constexpr int kWarmup = 3;
constexpr int kIterations = 25;

// A benchmark's own CUDA call failed: nothing it measured would mean anything.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace rv::bench
