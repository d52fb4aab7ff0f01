// The C ABI's GPU reductions of bf16 and f16 elements (rv_cuda_*_stacked_dtype), built on the
// binary32 kernels: correct, not the fastest (the native 2-byte kernels are core/cuda's to
// write). The fold widens each slot on the device (core/cuda/dtype_kernel.h, exact) into a
// scratch binary32 table, folds it with the binary32 kernel and narrows the result once: the
// fixed-order contract of docs/DESIGN.md §2.5 exactly. The exact contract must round the
// exact sum directly to the half format, which no device kernel does yet (rounding the
// binary32 result again would round twice), so it reduces on the host by the law.
#include <cstdint>
#include <vector>

#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "capi/stacked_arguments.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/dtype_kernel.h"
#include "core/cuda/exact_kernel.h"
#include "core/cuda/fold_kernel.h"
#include "core/dtype_arrays.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"

namespace {

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

// Device memory ordered on one stream (cudaMallocAsync / cudaFreeAsync): usable by the work
// enqueued after the allocation and released after it, without the host waiting.
class StreamScratch {
 public:
  StreamScratch(std::size_t bytes, void* stream) : stream_(as_stream(stream)) {
    RV_CUDA_CHECK(cudaMallocAsync(&data_, bytes == 0 ? 1 : bytes, stream_));
  }
  ~StreamScratch() { (void)cudaFreeAsync(data_, stream_); }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  float* floats() const { return static_cast<float*>(data_); }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace

extern "C" rv_status rv_cuda_fold_stacked_dtype(int device, const void* d_stacked, uint32_t world,
                                                size_t slot_stride, size_t n, int op, int dtype,
                                                void* d_out, void* cuda_stream) {
  return rv::capi::guarded("rv_cuda_fold_stacked_dtype", [&] {
    const rv::Op parsed = rv::capi::op_from_c(op);
    const rv::DType type = rv::capi::dtype_from_c(dtype);
    const std::size_t size = rv::dtype_bytes(type);
    rv::capi::check_stacked_arguments({d_stacked, world, slot_stride, n, d_out, UINT32_MAX, size});
    if (n == 0) return;
    const rv::cuda_detail::ScopedDevice scope(device);
    if (type == rv::DType::kF32) {
      rv::launch_fold_stacked(static_cast<const float*>(d_stacked), world, slot_stride, n, parsed,
                              static_cast<float*>(d_out), cuda_stream);
      return;
    }
    const StreamScratch table(static_cast<std::size_t>(world) * n * sizeof(float), cuda_stream);
    const auto* slots = static_cast<const unsigned char*>(d_stacked);
    for (std::uint32_t r = 0; r < world; ++r) {
      rv::launch_widen(slots + r * slot_stride * size, n, type, table.floats() + r * n,
                       cuda_stream);
    }
    rv::launch_fold_stacked(table.floats(), world, n, n, parsed, table.floats(), cuda_stream);
    rv::launch_narrow(table.floats(), n, type, d_out, cuda_stream);  // the one rounding
  });
}

extern "C" rv_status rv_cuda_exact_reduce_stacked_dtype(int device, const void* d_stacked,
                                                        uint32_t world, size_t slot_stride,
                                                        size_t n, int op, int dtype, void* d_out,
                                                        void* cuda_stream) {
  return rv::capi::guarded("rv_cuda_exact_reduce_stacked_dtype", [&] {
    const rv::Op parsed = rv::capi::op_from_c(op);
    const rv::DType type = rv::capi::dtype_from_c(dtype);
    const std::size_t size = rv::dtype_bytes(type);
    rv::capi::check_stacked_arguments(
        {d_stacked, world, slot_stride, n, d_out, rv::exact::kMaxWorld, size});
    if (n == 0) return;
    const rv::cuda_detail::ScopedDevice scope(device);
    if (type == rv::DType::kF32) {
      rv::launch_exact_reduce_stacked(static_cast<const float*>(d_stacked), world, slot_stride, n,
                                      parsed, static_cast<float*>(d_out), cuda_stream);
      return;
    }
    // Host staging, ordered after the caller's work on the stream: the slots down (one 2-D
    // copy of W rows of n elements), the law's exact rounding to the dtype, the result up.
    // The host memory is pageable and local, so the call waits for both copies.
    const cudaStream_t stream = as_stream(cuda_stream);
    std::vector<unsigned char> slots(static_cast<std::size_t>(world) * n * size);
    RV_CUDA_CHECK(cudaMemcpy2DAsync(slots.data(), n * size, d_stacked, slot_stride * size, n * size,
                                    world, cudaMemcpyDeviceToHost, stream));
    RV_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<float> table(static_cast<std::size_t>(world) * n), result(n);
    rv::widen_into(slots.data(), table.size(), type, table.data());
    rv::exact_reduce_stacked(table.data(), world, n, n, parsed, result.data(), type);
    rv::narrow_into(result.data(), n, type, slots.data());  // values of the dtype: exact
    RV_CUDA_CHECK(cudaMemcpyAsync(d_out, slots.data(), n * size, cudaMemcpyHostToDevice, stream));
    RV_CUDA_CHECK(cudaStreamSynchronize(stream));
  });
}
