// The exact contract on one CPU (docs/DESIGN.md §2): the windowed dataflow of the live
// reducers over a stacked table of W slots. The straight reference it must equal bit for bit
// (sharing none of the window and limb logic) is the oracle's reference_exact
// (core/oracle/reference.h); the tests hold both to an independent MPFR oracle.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"
#include "core/dtype.h"

namespace rv {

// The live dataflow in one process: every slot's agreement words max-combined, every slot's
// digits summed (ascending; integer sums, so any order gives the same bits), rounded. Slot r
// at stacked + r × slot_stride; n values from a block-aligned start (element 0 of an arena,
// or any multiple of exact::kBlock). The results are rounded to `dtype` (docs/DESIGN.md §2.5)
// and written as their binary32 widening; the addends must be values of that dtype, widened.
void exact_reduce_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride,
                          std::size_t n, Op op, float* out, DType dtype = DType::kF32);

// Throws InputError naming `who` unless 1 ≤ world ≤ 2^20 and, for W > 1, slot_stride ≥ n:
// the arguments every stacked reduction (this one, the host's in double, the GPU kernel)
// takes.
void check_stacked_table(const char* who, std::uint32_t world, std::size_t slot_stride,
                         std::size_t n);

}  // namespace rv
