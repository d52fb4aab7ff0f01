// Whole arrays between a dtype's own bytes and the binary32 widening every pipeline carries
// (docs/DESIGN.md §2.5), with the one rounding a contract takes at its end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace rv {

// values[i] = the value of `dtype` nearest values[i] (core/dtype_law.h's round_to_dtype): the
// fixed-order contract's last step for bf16 and f16; nothing for f32.
void round_to_dtype_in_place(float* values, std::size_t n, DType dtype);

// n elements of `dtype` (little-endian bytes at `bytes`, dtype_bytes(dtype) each) widened to
// binary32 (exact).
void widen_into(const void* bytes, std::size_t n, DType dtype, float* out);

// n widened values written as `dtype`'s bytes (a value not of the format is rounded to it;
// f32 values are copied).
void narrow_into(const float* values, std::size_t n, DType dtype, void* bytes);

// The bytes of n widened values as `dtype` stores them: what is digested and dumped.
std::vector<unsigned char> dtype_bytes_of(const float* values, std::size_t n, DType dtype);

}  // namespace rv
