#include "core/oracle/reference.h"

#include <cstdint>
#include <string>

#include "core/dtype_arrays.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/fold.h"

namespace rv {

std::vector<float> reference_fixed_order(const std::vector<std::vector<float>>& arenas, Op op,
                                         DType dtype) {
  RV_ENFORCE_GE(InputError, arenas.size(), std::size_t{1}, "the reference fold needs a rank");
  const std::size_t n = arenas[0].size();
  std::vector<const float*> addends;
  for (std::size_t r = 0; r < arenas.size(); ++r) {
    RV_ENFORCE_EQ(InputError, arenas[r].size(), n, "arena length of rank", r,
                  "differs from rank 0");
    addends.push_back(arenas[r].data());
  }
  std::vector<float> out(n);
  fold_ascending(addends.data(), static_cast<std::uint32_t>(arenas.size()), n, op, out.data());
  round_to_dtype_in_place(out.data(), n, dtype);
  return out;
}

std::vector<float> reference_exact(const std::vector<std::vector<float>>& arenas, Op op,
                                   DType dtype) {
  RV_ENFORCE_GE(InputError, arenas.size(), std::size_t{1}, "the exact reference needs a rank");
  const std::size_t n = arenas[0].size();
  for (std::size_t r = 0; r < arenas.size(); ++r) {
    RV_ENFORCE_EQ(InputError, arenas[r].size(), n, "arena length of rank", r,
                  "differs from rank 0");
  }
  const auto world = static_cast<std::uint32_t>(arenas.size());
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    exact::ExactSum s{};
    std::int64_t pos_inf = 0, neg_inf = 0, not_negative_zero = 0;
    for (const auto& arena : arenas) {
      const std::uint32_t bits = float_bits(arena[i]);
      if (bits != 0x80000000u) ++not_negative_zero;
      if (is_nan_bits(bits)) {
        ++pos_inf;
        ++neg_inf;
      } else if (bits == 0x7F800000u) {
        ++pos_inf;
      } else if (bits == 0xFF800000u) {
        ++neg_inf;
      } else {
        const exact::Magnitude m = exact::magnitude_of(bits);
        const auto k = static_cast<std::int64_t>(m.significand);
        exact::add_shifted(s, (bits >> 31) != 0 ? -k : k, m.shift);
      }
    }
    const std::int64_t special = pos_inf | (neg_inf << exact::kSpecialFieldBits) |
                                 (not_negative_zero << (2 * exact::kSpecialFieldBits));
    const bool mean = op == Op::kMean;
    switch (dtype) {
      case DType::kF32:
        out[i] = float_from_bits(exact::round_exact_sum(s, 0, world, mean, true, special));
        break;
      case DType::kBF16:
        out[i] = widen_bf16(static_cast<std::uint16_t>(
            exact::round_exact_sum<BFloat16Format>(s, 0, world, mean, true, special)));
        break;
      case DType::kF16:
        out[i] = widen_f16(static_cast<std::uint16_t>(
            exact::round_exact_sum<Float16Format>(s, 0, world, mean, true, special)));
        break;
    }
  }
  return out;
}

std::vector<float> expected_reduction(const std::vector<std::vector<float>>& arenas,
                                      Contract contract, Op op, DType dtype) {
  switch (contract) {
    case Contract::kFixedOrder:
      return reference_fixed_order(arenas, op, dtype);
    case Contract::kExact:
      return reference_exact(arenas, op, dtype);
    case Contract::kLibrarySum:
      break;
  }
  throw InputError(
      "the library-sum contract has no portable result to expect; give "
      "fixed-order or exact");
}

}  // namespace rv
