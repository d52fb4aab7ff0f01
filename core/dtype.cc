#include "core/dtype.h"

#include "core/error.h"

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

std::vector<DType> parse_dtype_list(const std::vector<std::string>& names) {
  std::vector<DType> dtypes;
  for (const std::string& text : names) {
    const auto dtype = parse_dtype(text);
    if (!dtype) throw InputError("dtype '" + text + "' is not f32, bf16 or f16");
    dtypes.push_back(*dtype);
  }
  if (dtypes.empty()) throw InputError("no dtype given (f32, bf16 or f16)");
  return dtypes;
}

}  // namespace rv
