// The preconditions every C entry point checks before it touches memory: the op, and the
// stacked table (W slots of n values, slot_stride apart) with the output beside it. Pointers
// are compared as addresses only, never read, so the same checks serve host and device
// memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"
#include "core/dtype.h"

namespace rv::capi {

// RV_OP_SUM or RV_OP_MEAN, else InputError naming the value.
Op op_from_c(int op);
// RV_DTYPE_F32, RV_DTYPE_BF16 or RV_DTYPE_F16, else InputError naming the value.
DType dtype_from_c(int dtype);

struct StackedArguments {
  const void* stacked;
  std::uint32_t world;
  std::size_t slot_stride;
  std::size_t n;
  const void* out;
  std::uint32_t max_world;  // the contract's largest world
  // Bytes of one element (slot_stride and n count elements): 4, or 2 for bf16 and f16.
  std::size_t element_bytes = sizeof(float);
};

// Throws InputError naming the argument: world outside [1, max_world], a stride shorter than
// n, null pointers (n > 0), a table whose last element lies beyond the address space, an
// output that overlaps a slot other than being exactly slot 0.
void check_stacked_arguments(const StackedArguments& args);

}  // namespace rv::capi
