// The host reductions of the C ABI: the fixed-order fold (core/fold.h) and the exact
// contract's CPU path (core/exact/exact_reduction.h), each behind the entry-point checks.
#include <vector>
#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "capi/stacked_arguments.h"

#include "core/dtype_arrays.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"
#include "core/exact/stacked_in_double.h"
#include "core/fold.h"
#include "core/fp_environment.h"

using rv::capi::check_stacked_arguments;
using rv::capi::dtype_from_c;
using rv::capi::guarded;
using rv::capi::op_from_c;

extern "C" rv_status rv_fixed_order_reduce_stacked(const float* stacked, uint32_t world,
                                                   size_t slot_stride, size_t n, int op,
                                                   float* out) {
  return guarded("rv_fixed_order_reduce_stacked", [&] {
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

namespace {

// The W slots of 2-byte elements widened (exact) into one dense binary32 table, slot r at
// r × n: the half dtypes' addends as the binary32 values the contracts carry (DESIGN §2.5).
std::vector<float> widened_table(const void* stacked, std::uint32_t world, std::size_t slot_stride,
                                 std::size_t n, rv::DType dtype) {
  std::vector<float> table(static_cast<std::size_t>(world) * n);
  const auto* bytes = static_cast<const unsigned char*>(stacked);
  const std::size_t size = rv::dtype_bytes(dtype);
  for (std::uint32_t r = 0; r < world; ++r) {
    rv::widen_into(bytes + r * slot_stride * size, n, dtype, table.data() + r * n);
  }
  return table;
}

}  // namespace

extern "C" rv_status rv_fixed_order_reduce_stacked_dtype(const void* stacked, uint32_t world,
                                                         size_t slot_stride, size_t n, int op,
                                                         int dtype, void* out) {
  return guarded("rv_fixed_order_reduce_stacked_dtype", [&] {
    const rv::Op parsed = op_from_c(op);
    const rv::DType type = dtype_from_c(dtype);
    check_stacked_arguments(
        {stacked, world, slot_stride, n, out, UINT32_MAX, rv::dtype_bytes(type)});
    rv::enforce_ieee_fp_environment();  // as rv_fixed_order_reduce_stacked: FTZ/DAZ would change
                                        // the fold
    if (n == 0) return;
    if (type == rv::DType::kF32) {
      rv::fold_stacked(static_cast<const float*>(stacked), world, slot_stride, n, parsed,
                       static_cast<float*>(out));
      return;
    }
    // The fixed-order contract of a half dtype: the widened addends folded in binary32, then
    // one rounding to the dtype (narrow_into), written only after every slot was read, so out
    // may be slot 0.
    std::vector<float> table = widened_table(stacked, world, slot_stride, n, type);
    rv::fold_stacked(table.data(), world, n, n, parsed, table.data());
    rv::narrow_into(table.data(), n, type, out);
  });
}

extern "C" rv_status rv_exact_reduce_stacked_dtype(const void* stacked, uint32_t world,
                                                   size_t slot_stride, size_t n, int op, int dtype,
                                                   void* out) {
  return guarded("rv_exact_reduce_stacked_dtype", [&] {
    const rv::Op parsed = op_from_c(op);
    const rv::DType type = dtype_from_c(dtype);
    check_stacked_arguments(
        {stacked, world, slot_stride, n, out, rv::exact::kMaxWorld, rv::dtype_bytes(type)});
    rv::enforce_ieee_fp_environment();  // as rv_exact_reduce_stacked
    if (n == 0) return;
    if (type == rv::DType::kF32) {
      rv::exact_reduce_stacked_in_double(static_cast<const float*>(stacked), world, slot_stride, n,
                                         parsed, static_cast<float*>(out));
      return;
    }
    // The exact sum rounded once, directly to the dtype (the law's rounding of the format;
    // the fast path in double rounds to binary32 only). Its results are values of the dtype,
    // so narrowing them copies their bits.
    std::vector<float> table = widened_table(stacked, world, slot_stride, n, type);
    std::vector<float> result(n);
    rv::exact_reduce_stacked(table.data(), world, n, n, parsed, result.data(), type);
    rv::narrow_into(result.data(), n, type, out);
  });
}
