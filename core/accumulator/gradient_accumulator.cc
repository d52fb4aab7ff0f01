#include "core/accumulator/gradient_accumulator.h"

#include <limits>

#include "core/error.h"

namespace rv {

void GradientAccumulator::check_rows(const char* who, std::size_t row_stride, std::size_t rows,
                                     std::size_t n) {
  if (rows > 1 && row_stride < n) {
    throw InputError(detail::concat(who, ": a row stride of ", row_stride,
                                    " elements is shorter than a row of ", n));
  }
  if (rows > 1 && row_stride > std::numeric_limits<std::size_t>::max() / 4 / (rows - 1)) {
    throw InputError(detail::concat(who, ": ", rows, " rows ", row_stride,
                                    " elements apart do not fit in memory"));
  }
}

void GradientAccumulator::add_rows(const void* values, std::size_t row_stride, std::size_t rows,
                                   std::size_t offset, std::size_t n, DType dtype, void* stream) {
  check_rows("add_rows", row_stride, rows, n);
  const auto* bytes = static_cast<const unsigned char*>(values);
  for (std::size_t r = 0; r < rows; ++r) {
    add(bytes + r * row_stride * dtype_bytes(dtype), offset, n, dtype, stream);
  }
}

}  // namespace rv
