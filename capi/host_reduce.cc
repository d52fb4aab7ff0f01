// The host reductions of the C ABI: the fixed-order fold (core/fold.h) and the exact
// contract's CPU path (core/exact/exact_reduction.h), each behind the entry-point checks.
#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "capi/stacked_arguments.h"
#include "core/exact/exact_law.h"
#include "core/exact/stacked_in_double.h"
#include "core/fold.h"
#include "core/fp_environment.h"

using rv::capi::check_stacked_arguments;
using rv::capi::guarded;
using rv::capi::op_from_c;

extern "C" rv_status rv_fold_stacked(const float* stacked, uint32_t world, size_t slot_stride,
                                     size_t n, int op, float* out) {
  return guarded("rv_fold_stacked", [&] {
    const rv::Op parsed = op_from_c(op);
    check_stacked_arguments({stacked, world, slot_stride, n, out, UINT32_MAX});
    // The caller's thread may carry FTZ/DAZ (torch.set_flush_denormal(True) sets them), which
    // would flush subnormal addends: refuse rather than compute other bits.
    rv::enforce_ieee_fp_environment();
    if (n != 0) rv::fold_stacked(stacked, world, slot_stride, n, parsed, out);
  });
}

extern "C" rv_status rv_exact_reduce_stacked(const float* stacked, uint32_t world,
                                             size_t slot_stride, size_t n, int op, float* out) {
  return guarded("rv_exact_reduce_stacked", [&] {
    const rv::Op parsed = op_from_c(op);
    check_stacked_arguments({stacked, world, slot_stride, n, out, rv::exact::kMaxWorld});
    // The exact path would give the law's bits in any state (it falls back to integer
    // arithmetic when the state is not IEEE's), but like the fold the C ABI refuses a process
    // whose state (FTZ/DAZ from a fast-math library, another rounding mode) breaks the fold.
    rv::enforce_ieee_fp_environment();
    if (n != 0) rv::exact_reduce_stacked_in_double(stacked, world, slot_stride, n, parsed, out);
  });
}
