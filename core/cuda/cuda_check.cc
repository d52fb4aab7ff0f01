#include "core/cuda/cuda_check.h"

#include <string>

#include "core/error.h"

namespace rv::cuda_detail {

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  // Clear the error unless it is sticky (a sticky one stays, and every later call says so).
  (void)cudaGetLastError();
  throw RuntimeFailure(std::string("CUDA error ") + cudaGetErrorName(status) + " (" +
                       cudaGetErrorString(status) + ") in " + call + " [" + file + ":" +
                       std::to_string(line) + "]");
}

void check_launch(const char* kernel, const char* file, int line) {
  check_cuda(cudaGetLastError(), kernel, file, line);
}

ScopedDevice::ScopedDevice(int device) {
  RV_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) RV_CUDA_CHECK(cudaSetDevice(device));
}

ScopedDevice::~ScopedDevice() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous_) {
    (void)cudaSetDevice(previous_);
  }
}

}  // namespace rv::cuda_detail
