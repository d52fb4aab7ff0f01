// RV_CUDA_CHECK: every CUDA runtime call of core/cuda goes through it, so a device error is
// a RuntimeFailure naming the call, the error and the source line instead of a result that
// silently stayed unwritten. For core/cuda and the C ABI's CUDA entry points (capi/) only:
// the one header of ours besides them that includes the CUDA runtime's own.
#pragma once

#include <cuda_runtime_api.h>

namespace rv::cuda_detail {

// Throws RuntimeFailure("CUDA error cudaErrorX (text) in <call> [file:line]") unless ok.
void check_cuda(cudaError_t status, const char* call, const char* file, int line);

// The same for a launch: the launch error, or the last error a kernel launch left.
void check_launch(const char* kernel, const char* file, int line);

// Sets the calling thread's device for the scope and restores the previous one after, so a
// caller's own device choice survives our calls.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace rv::cuda_detail

#define RV_CUDA_CHECK(call) ::rv::cuda_detail::check_cuda((call), #call, __FILE__, __LINE__)
#define RV_CUDA_CHECK_LAUNCH(kernel) ::rv::cuda_detail::check_launch(kernel, __FILE__, __LINE__)
