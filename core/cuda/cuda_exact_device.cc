#include "core/cuda/cuda_exact_device.h"

#include <cstring>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/exact_kernel.h"
#include "core/error.h"

namespace rv {
namespace {

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

bool same_slots(const std::vector<ExactBlockSlot>& a, const std::vector<ExactBlockSlot>& b) {
  static_assert(sizeof(ExactBlockSlot) == 16, "ExactBlockSlot compares as 16 plain bytes");
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(ExactBlockSlot)) == 0);
}

}  // namespace

CudaExactDevice::CudaExactDevice(const CudaFoldDevice& fold_device)
    : device_(fold_device.device()), stream_(fold_device.stream()), name_(fold_device.name()) {}

CudaExactDevice::~CudaExactDevice() {
  if (slots_ == nullptr) return;
  int previous = -1;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess && previous != device_;
  if (restore) (void)cudaSetDevice(device_);
  (void)cudaStreamSynchronize(as_stream(stream_));  // a round may still read the slots
  (void)cudaFree(slots_);
  if (restore) (void)cudaSetDevice(previous);
}

std::int64_t* CudaExactDevice::allocate_words(std::size_t n) {
  const cuda_detail::ScopedDevice scope(device_);
  void* p = nullptr;
  RV_CUDA_CHECK(cudaMalloc(&p, (n ? n : 1) * sizeof(std::int64_t)));
  return static_cast<std::int64_t*>(p);
}

void CudaExactDevice::free_words(std::int64_t* p) {
  if (p == nullptr) return;
  const cuda_detail::ScopedDevice scope(device_);
  // cudaFree waits for the device; work on our stream that still uses p finishes first.
  RV_CUDA_CHECK(cudaFree(p));
}

void CudaExactDevice::agreement_words(const float* values, std::size_t n, std::int64_t* words) {
  const cuda_detail::ScopedDevice scope(device_);
  launch_exact_agreement_words(values, n, words, stream_);
}

void CudaExactDevice::download_words(std::int64_t* host, const std::int64_t* words, std::size_t n) {
  if (n == 0) return;
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaMemcpyAsync(host, words, n * sizeof(std::int64_t), cudaMemcpyDeviceToHost,
                                as_stream(stream_)));
  RV_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_)));
}

const ExactBlockSlot* CudaExactDevice::device_slots(const ExactPlan& plan) {
  if (uploaded_valid_ && same_slots(plan.blocks, uploaded_)) return slots_;
  uploaded_valid_ = false;
  if (slots_capacity_ < plan.blocks.size()) {
    if (slots_ != nullptr) RV_CUDA_CHECK(cudaFree(slots_));  // waits for work still reading it
    slots_ = nullptr;
    slots_capacity_ = 0;
    void* p = nullptr;
    RV_CUDA_CHECK(cudaMalloc(&p, plan.blocks.size() * sizeof(ExactBlockSlot)));
    slots_ = static_cast<ExactBlockSlot*>(p);
    slots_capacity_ = plan.blocks.size();
  }
  uploaded_ = plan.blocks;
  if (!uploaded_.empty()) {
    // Ordered on the stream after the kernels that read the previous slots. A pageable
    // source is staged before the call returns, so uploaded_ may change afterwards.
    RV_CUDA_CHECK(cudaMemcpyAsync(slots_, uploaded_.data(),
                                  uploaded_.size() * sizeof(ExactBlockSlot), cudaMemcpyHostToDevice,
                                  as_stream(stream_)));
  }
  uploaded_valid_ = true;
  return slots_;
}

void CudaExactDevice::encode(const float* values, const ExactPlan& plan, std::int64_t* words) {
  if (plan.count == 0) return;
  const cuda_detail::ScopedDevice scope(device_);
  launch_exact_encode(values, view_of(plan, device_slots(plan)), words, stream_);
}

void CudaExactDevice::round(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out,
                            DType dtype) {
  if (plan.count == 0) return;
  const cuda_detail::ScopedDevice scope(device_);
  launch_exact_round(sums, view_of(plan, device_slots(plan)), op, dtype, out, stream_);
}

void CudaExactDevice::synchronize() {
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_)));
}

}  // namespace rv
