// The fixed-order fold of the C ABI on a GPU: core/cuda/fixed_order/fold_kernel.h's kernel on the
// caller's stream and device pointers (a torch tensor's storage on torch's current stream).
#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "capi/stacked_arguments.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/fixed_order/fold_kernel.h"

extern "C" rv_status rv_cuda_fixed_order_reduce_stacked(int device, const float* d_stacked,
                                                        uint32_t world, size_t slot_stride,
                                                        size_t n, int op, float* d_out,
                                                        void* cuda_stream) {
  return rv::capi::guarded("rv_cuda_fixed_order_reduce_stacked", [&] {
    const rv::Op parsed = rv::capi::op_from_c(op);
    rv::capi::check_stacked_arguments({d_stacked, world, slot_stride, n, d_out, UINT32_MAX});
    if (n == 0) return;
    const rv::cuda_detail::ScopedDevice scope(device);
    rv::launch_fold_stacked(d_stacked, world, slot_stride, n, parsed, d_out, cuda_stream);
  });
}
