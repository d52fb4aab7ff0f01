#include "capi/stacked_arguments.h"

#include <cstdint>
#include <limits>
#include <string>

#include "capi/reduce_verify_c.h"
#include "core/error.h"

namespace rv::capi {

Op op_from_c(int op) {
  if (op == RV_OP_SUM) return Op::kSum;
  if (op == RV_OP_MEAN) return Op::kMean;
  throw InputError("op " + std::to_string(op) + " is neither RV_OP_SUM (0) nor RV_OP_MEAN (1)");
}

DType dtype_from_c(int dtype) {
  if (dtype == RV_DTYPE_F32) return DType::kF32;
  if (dtype == RV_DTYPE_BF16) return DType::kBF16;
  if (dtype == RV_DTYPE_F16) return DType::kF16;
  throw InputError("dtype " + std::to_string(dtype) +
                   " is none of RV_DTYPE_F32 (0), RV_DTYPE_BF16 (1), RV_DTYPE_F16 (2)");
}

void check_stacked_arguments(const StackedArguments& args) {
  RV_ENFORCE_GE(InputError, args.world, 1u, "a reduction needs at least one rank");
  RV_ENFORCE_LE(InputError, args.world, args.max_world, "world is beyond this contract's largest");
  if (args.n == 0) return;  // nothing is read or written
  if (args.stacked == nullptr) throw InputError("stacked is a null pointer");
  if (args.out == nullptr) throw InputError("out is a null pointer");
  if (args.world > 1) {
    RV_ENFORCE_GE(InputError, args.slot_stride, args.n, "slots would overlap: slot_stride < n");
  }
  // The table spans (W − 1) × stride + n elements from `stacked`; all in bytes from here on.
  constexpr std::uintptr_t kMax = std::numeric_limits<std::uintptr_t>::max();
  const std::size_t size = args.element_bytes;
  const std::uintptr_t stride_bytes = args.slot_stride * size;
  const std::uintptr_t n_bytes = args.n * size;
  if (args.slot_stride > kMax / size || args.n > kMax / size ||
      (args.world > 1 && stride_bytes > (kMax - n_bytes) / (args.world - 1))) {
    throw InputError("the stacked table does not fit the address space (world " +
                     std::to_string(args.world) + ", slot_stride " +
                     std::to_string(args.slot_stride) + ")");
  }
  const auto begin = reinterpret_cast<std::uintptr_t>(args.stacked);
  const std::uintptr_t span = (args.world - 1) * stride_bytes + n_bytes;
  if (begin > kMax - span) throw InputError("the stacked table wraps around the address space");
  const auto out = reinterpret_cast<std::uintptr_t>(args.out);
  if (out > kMax - n_bytes) throw InputError("out wraps around the address space");
  if (out == begin || out + n_bytes <= begin || out >= begin + span) return;
  // The output lies inside the table's span and is not slot 0 itself: it must sit in a gap
  // between slots (stride > n), touching none.
  for (std::uint32_t r = 0; r < args.world; ++r) {
    const std::uintptr_t slot = begin + r * stride_bytes;
    if (out < slot + n_bytes && slot < out + n_bytes) {
      throw InputError("out overlaps slot " + std::to_string(r) +
                       " of the stacked table (only an in-place reduction into exactly slot 0 "
                       "is allowed)");
    }
  }
}

}  // namespace rv::capi
