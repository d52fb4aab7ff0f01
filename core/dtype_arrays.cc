#include "core/dtype_arrays.h"

#include <cstring>

#include "core/dtype_law.h"

namespace rv {

void round_to_dtype_in_place(float* values, std::size_t n, DType dtype) {
  if (dtype == DType::kF32) return;
  for (std::size_t i = 0; i < n; ++i) values[i] = round_to_dtype(dtype, values[i]);
}

void widen_into(const void* bytes, std::size_t n, DType dtype, float* out) {
  if (dtype == DType::kF32) {
    std::memcpy(out, bytes, n * sizeof(float));
    return;
  }
  const auto* in = static_cast<const unsigned char*>(bytes);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, in + 2 * i, 2);
    out[i] = widen_half(dtype, bits);
  }
}

void narrow_into(const float* values, std::size_t n, DType dtype, void* bytes) {
  if (dtype == DType::kF32) {
    std::memcpy(bytes, values, n * sizeof(float));
    return;
  }
  auto* out = static_cast<unsigned char*>(bytes);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint16_t bits = half_bits(dtype, values[i]);
    std::memcpy(out + 2 * i, &bits, 2);
  }
}

std::vector<unsigned char> dtype_bytes_of(const float* values, std::size_t n, DType dtype) {
  std::vector<unsigned char> bytes(n * dtype_bytes(dtype));
  narrow_into(values, n, dtype, bytes.data());
  return bytes;
}

}  // namespace rv
