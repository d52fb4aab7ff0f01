// The C ABI's GPU reductions of bf16 and f16 elements (rv_cuda_*_stacked_dtype): the native
// 2-byte kernels of core/cuda/half_stacked_kernel.h, enqueued on the caller's stream with no
// scratch memory and no host synchronisation. Their bits are the host law's
// (docs/DESIGN.md §2.5): the fold widens, folds in binary32 and narrows once; the exact
// kernel rounds each exact sum straight to the half format, never through binary32.
// RV_DTYPE_F32 goes to the binary32 kernels.
#include <cstdint>

#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "capi/stacked_arguments.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/half_stacked_kernel.h"
#include "core/exact/exact_law.h"

extern "C" rv_status rv_cuda_fixed_order_reduce_stacked_dtype(int device, const void* d_stacked,
                                                              uint32_t world, size_t slot_stride,
                                                              size_t n, int op, int dtype,
                                                              void* d_out, void* cuda_stream) {
  return rv::capi::guarded("rv_cuda_fixed_order_reduce_stacked_dtype", [&] {
    const rv::Op parsed = rv::capi::op_from_c(op);
    const rv::DType type = rv::capi::dtype_from_c(dtype);
    rv::capi::check_stacked_arguments(
        {d_stacked, world, slot_stride, n, d_out, UINT32_MAX, rv::dtype_bytes(type)});
    if (n == 0) return;
    const rv::cuda_detail::ScopedDevice scope(device);
    rv::cuda_fold_stacked_half(d_stacked, world, slot_stride, n, parsed, type, d_out,
                               cuda_stream);
  });
}

extern "C" rv_status rv_cuda_exact_reduce_stacked_dtype(int device, const void* d_stacked,
                                                        uint32_t world, size_t slot_stride,
                                                        size_t n, int op, int dtype, void* d_out,
                                                        void* cuda_stream) {
  return rv::capi::guarded("rv_cuda_exact_reduce_stacked_dtype", [&] {
    const rv::Op parsed = rv::capi::op_from_c(op);
    const rv::DType type = rv::capi::dtype_from_c(dtype);
    rv::capi::check_stacked_arguments(
        {d_stacked, world, slot_stride, n, d_out, rv::exact::kMaxWorld, rv::dtype_bytes(type)});
    if (n == 0) return;
    const rv::cuda_detail::ScopedDevice scope(device);
    rv::cuda_exact_stacked_half(d_stacked, world, slot_stride, n, parsed, type, d_out,
                                cuda_stream);
  });
}
