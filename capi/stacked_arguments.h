// The preconditions every C entry point checks before it touches memory: the op, and the
// stacked table (W slots of n values, slot_stride apart) with the output beside it. Pointers
// are compared as addresses only, never read, so the same checks serve host and device
// memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"

namespace rv::capi {

// RV_OP_SUM or RV_OP_MEAN, else InputError naming the value.
Op op_from_c(int op);

struct StackedArguments {
  const float* stacked;
  std::uint32_t world;
  std::size_t slot_stride;
  std::size_t n;
  const float* out;
  std::uint32_t max_world;  // the contract's largest world
};

// Throws InputError naming the argument: world outside [1, max_world], a stride shorter than
// n, null pointers (n > 0), a table whose last element lies beyond the address space, an
// output that overlaps a slot other than being exactly slot 0.
void check_stacked_arguments(const StackedArguments& args);

}  // namespace rv::capi
