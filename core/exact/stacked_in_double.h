// The exact contract over a stacked table on one CPU, fast: each element's W addends summed
// in double where that sum is provably exact, rounded once (docs/DESIGN.md §2.4, the
// stacked reduction). The C ABI's host path (rv_exact_reduce_stacked) and so the CPU DDP
// hooks; the GPU's stacked kernel does the same per element.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"
#include "core/exact/host_exact.h"

namespace rv {

// The bits of exact_reduce_stacked (core/exact/exact_reduction.h) for the same arguments:
// slot r at stacked + r × slot_stride, n values each, the result into out (which may be
// slot 0). Elements whose window is wider than a double, and every element when the
// floating-point state is not IEEE's default (rounding to nearest even, subnormals kept),
// go through exact_reduce_stacked itself.
void exact_reduce_stacked_in_double(const float* stacked, std::uint32_t world,
                                    std::size_t slot_stride, std::size_t n, Op op, float* out);

namespace detail {
// The same with the instruction set named (host_exact.h's HostIsa), so that the tests hold
// each to the law; an unavailable one is an InputError.
void exact_reduce_stacked_in_double(const float* stacked, std::uint32_t world,
                                    std::size_t slot_stride, std::size_t n, Op op, float* out,
                                    HostIsa isa);
}  // namespace detail

}  // namespace rv
