#include "core/cuda/exact/cuda_exact_device.h"

#include <cstring>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/dtype_kernel.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/cuda/half_stacked_kernel.h"
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

CudaExactDevice::CudaExactDevice(const CudaFixedOrderDevice& fixed_order_device)
    : device_(fixed_order_device.device()),
      stream_(fixed_order_device.stream()),
      name_(fixed_order_device.name()) {}

CudaExactDevice::~CudaExactDevice() {
  if (slots_ == nullptr && half_scratch_ == nullptr) return;
  int previous = -1;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess && previous != device_;
  if (restore) (void)cudaSetDevice(device_);
  (void)cudaStreamSynchronize(as_stream(stream_));  // a round may still read the slots
  if (slots_ != nullptr) (void)cudaFree(slots_);
  if (half_scratch_ != nullptr) (void)cudaFree(half_scratch_);
  if (restore) (void)cudaSetDevice(previous);
}

float* CudaExactDevice::allocate_values(std::size_t n) {
  const cuda_detail::ScopedDevice scope(device_);
  void* p = nullptr;
  RV_CUDA_CHECK(cudaMalloc(&p, (n ? n : 1) * sizeof(float)));
  return static_cast<float*>(p);
}

void CudaExactDevice::free_values(float* p) {
  if (p == nullptr) return;
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaFree(p));  // waits for the device: no kernel still reads p
}

void CudaExactDevice::reduce_stacked(const float* stacked, std::uint32_t world,
                                     std::size_t slot_stride, std::size_t n, Op op, float* out,
                                     DType dtype) {
  const cuda_detail::ScopedDevice scope(device_);
  if (n == 0) return;
  if (dtype == DType::kF32) {
    launch_exact_reduce_stacked(stacked, world, slot_stride, n, op, out, stream_);
    return;
  }
  // The table's span in elements, then room for the n results after it.
  const std::size_t span = world == 1 ? n : (world - 1) * slot_stride + n;
  const std::size_t bytes = (span + n) * 2;
  if (half_scratch_bytes_ < bytes) {
    if (half_scratch_ != nullptr) RV_CUDA_CHECK(cudaFree(half_scratch_));  // waits for readers
    half_scratch_ = nullptr;
    half_scratch_bytes_ = 0;
    RV_CUDA_CHECK(cudaMalloc(&half_scratch_, bytes));
    half_scratch_bytes_ = bytes;
  }
  auto* table = static_cast<unsigned char*>(half_scratch_);
  void* result = table + span * 2;
  // Narrowing the dtype's widened values is exact; the gaps between slots are narrowed too
  // (whatever they hold) and never read.
  launch_narrow(stacked, span, dtype, table, stream_);
  cuda_exact_stacked_half(table, world, slot_stride, n, op, dtype, result, stream_);
  launch_widen(result, n, dtype, out, stream_);
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
