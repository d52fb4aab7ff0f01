// The exact contract of the C ABI on one GPU, over a stacked table of W slots: the stacked
// kernel (core/cuda/exact/exact_kernel.h's launch_exact_reduce_stacked), one launch on the caller's
// stream and no host synchronisation; the bits of the host's rv_exact_reduce_stacked.
#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "capi/stacked_arguments.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/exact/exact_law.h"

extern "C" rv_status rv_cuda_exact_reduce_stacked(int device, const float* d_stacked,
                                                  uint32_t world, size_t slot_stride, size_t n,
                                                  int op, float* d_out, void* cuda_stream) {
  return rv::capi::guarded("rv_cuda_exact_reduce_stacked", [&] {
    const rv::Op parsed = rv::capi::op_from_c(op);
    rv::capi::check_stacked_arguments(
        {d_stacked, world, slot_stride, n, d_out, rv::exact::kMaxWorld});
    if (n == 0) return;
    const rv::cuda_detail::ScopedDevice scope(device);
    rv::launch_exact_reduce_stacked(d_stacked, world, slot_stride, n, parsed, d_out, cuda_stream);
  });
}
