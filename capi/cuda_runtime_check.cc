#include "capi/cuda_runtime_check.h"

#include <string>

#include "core/error.h"

namespace rv::capi {

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw RuntimeFailure(std::string("CUDA error ") + cudaGetErrorName(status) + " (" +
                       cudaGetErrorString(status) + ") in " + call + " [" + file + ":" +
                       std::to_string(line) + "]");
}

ScopedDevice::ScopedDevice(int device) {
  int count = 0;
  RV_CAPI_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count) {
    throw InputError("device " + std::to_string(device) + " does not exist (this process sees " +
                     std::to_string(count) + " CUDA device(s))");
  }
  RV_CAPI_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) RV_CAPI_CUDA_CHECK(cudaSetDevice(device));
}

ScopedDevice::~ScopedDevice() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous_ && previous_ >= 0) {
    (void)cudaSetDevice(previous_);
  }
}

}  // namespace rv::capi
