// The C ABI's own CUDA runtime checks (core/cuda keeps its cuda_check.h private to its
// target): a failing runtime call is a RuntimeFailure naming the call, and ScopedDevice sets
// a device for one entry point and restores the caller's (a torch thread's current device is
// torch's business). Private to capi/, CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

namespace rv::capi {

// Throws RuntimeFailure("CUDA error cudaErrorX (text) in <call> [file:line]") unless ok.
void check_cuda(cudaError_t status, const char* call, const char* file, int line);

class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace rv::capi

#define RV_CAPI_CUDA_CHECK(call) ::rv::capi::check_cuda((call), #call, __FILE__, __LINE__)
