#include "core/fold.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/fold_law.h"

namespace rv {
namespace {

// Elements per block: the accumulator block stays in L1 while every slot streams past it,
// so the output is written once per element instead of once per addend.
constexpr std::size_t kBlock = 2048;

// The finishing step of one element: the mean scale (sum × r, never pre-scaled addends) and
// the NaN rule.
struct Finish {
  bool mean;
  float scale;
  float operator()(float sum) const { return canonicalize_nan(mean ? sum * scale : sum); }
};

Finish finish_for(std::uint32_t world, Op op) { return Finish{op == Op::kMean, mean_scale(world)}; }

void finish_block(float* out, std::size_t count, std::uint32_t world, Op op) {
  const Finish finish = finish_for(world, op);
  for (std::size_t i = 0; i < count; ++i) out[i] = finish(out[i]);
}

template <typename SlotAt>
void fold_blocks(SlotAt slot_at, std::uint32_t world, std::size_t n, Op op, float* out) {
  RV_ENFORCE_GE(InternalError, world, 1u, "fold needs at least one addend");
  const Finish finish = finish_for(world, op);
  // The partial sums live in a block of their own, and out is written only by the last pass,
  // after every other addend of the block has been read: so out may alias any addend (the
  // live reducer folds its own copy in place, from its arena into its arena).
  alignas(64) float acc[kBlock];
  for (std::size_t begin = 0; begin < n; begin += kBlock) {
    const std::size_t count = std::min(kBlock, n - begin);
    float* result = out + begin;
    // The fold starts from addend 0 itself, not from +0.0: (+0.0) + (−0.0) is +0.0, so a
    // fold started from zero would turn a sum of −0.0s into +0.0. The first addition and the
    // finishing step ride on the first and last passes, so the block is walked W − 1 times.
    const float* first = slot_at(0) + begin;
    if (world == 1) {
      for (std::size_t i = 0; i < count; ++i) result[i] = finish(first[i]);
      continue;
    }
    const float* second = slot_at(1) + begin;
    if (world == 2) {
      for (std::size_t i = 0; i < count; ++i) result[i] = finish(first[i] + second[i]);
      continue;
    }
    for (std::size_t i = 0; i < count; ++i) acc[i] = first[i] + second[i];
    for (std::uint32_t r = 2; r + 1 < world; ++r) {
      const float* addend = slot_at(r) + begin;
      for (std::size_t i = 0; i < count; ++i) acc[i] += addend[i];
    }
    const float* last = slot_at(world - 1) + begin;
    for (std::size_t i = 0; i < count; ++i) result[i] = finish(acc[i] + last[i]);
  }
}

}  // namespace

void fold_ascending(const float* const* addends, std::uint32_t world, std::size_t n, Op op,
                    float* out) {
  fold_blocks([addends](std::uint32_t r) { return addends[r]; }, world, n, op, out);
}

void fold_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride, std::size_t n,
                  Op op, float* out) {
  fold_blocks([stacked, slot_stride](std::uint32_t r) { return stacked + r * slot_stride; }, world,
              n, op, out);
}

void finish_library_sum(float* values, std::size_t n, std::uint32_t world, Op op) {
  finish_block(values, n, world, op);
}

}  // namespace rv
