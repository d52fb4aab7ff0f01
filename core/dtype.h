// The element types a reduction can carry (docs/DESIGN.md §2.5): binary32, and the two
// half-precision formats training reduces in, bfloat16 and IEEE binary16. Their spellings
// (`f32`, `bf16`, `f16`) are used in case ids, reports, manifests and on the command line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rv {

enum class DType : std::uint8_t {
  kF32,   // IEEE binary32: 1 + 8 + 23 bits
  kBF16,  // bfloat16: 1 + 8 + 7 bits, binary32's exponent range
  kF16,   // IEEE binary16: 1 + 5 + 10 bits, largest finite 65504
};

inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

std::string_view to_string(DType dtype);
std::optional<DType> parse_dtype(std::string_view text);
// The dtypes of a list of names (a --dtype list), each checked: InputError naming a bad one,
// or an empty list.
std::vector<DType> parse_dtype_list(const std::vector<std::string>& names);

// Bytes of one element as stored, dumped, digested and read from --inputs files.
constexpr std::size_t dtype_bytes(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

}  // namespace rv
