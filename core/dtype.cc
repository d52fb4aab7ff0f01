#include "core/dtype.h"

namespace rv {

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kBF16:
      return "bf16";
    case DType::kF16:
      return "f16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view text) {
  for (const DType d : kAllDTypes) {
    if (text == to_string(d)) return d;
  }
  return std::nullopt;
}

}  // namespace rv
