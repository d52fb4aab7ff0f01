#include "core/exact/exact_reduction.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/host_exact.h"

namespace rv {

void exact_reduce_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride,
                          std::size_t n, Op op, float* out, DType dtype) {
  check_stacked_table("exact_reduce_stacked", world, slot_stride, n);
  // In chunks of whole window blocks: a block's window depends on that block's values alone,
  // so a chunk's plan is the whole arena's restricted to the chunk, and its digits (at most
  // 8 words an element) stay in the caches from the encode through the sums to the rounding.
  constexpr std::size_t kChunk = std::size_t{16} * exact::kBlock;
  const std::size_t chunk_words = exact_block_count(std::min(n, kChunk)) * exact::kAgreementWords;
  std::vector<std::int64_t> agreed(chunk_words), mine(chunk_words), sums, digits;
  for (std::size_t begin = 0; begin < n; begin += kChunk) {
    const std::size_t count = std::min(kChunk, n - begin);
    const std::size_t agreement_words = exact_block_count(count) * exact::kAgreementWords;
    const auto slot = [&](std::uint32_t r) { return stacked + r * slot_stride + begin; };
    for (std::uint32_t r = 0; r < world; ++r) {
      std::int64_t* target = r == 0 ? agreed.data() : mine.data();
      exact_agreement_words(slot(r), count, target);
      if (r != 0) merge_agreement_words(agreed.data(), mine.data(), agreement_words);
    }
    const ExactPlan plan = plan_exact_blocks(agreed.data(), count, world);
    if (sums.size() < plan.words) {
      sums.resize(plan.words);
      digits.resize(plan.words);
    }
    // Every word of the plan is written by the encode: slot 0's into the sums.
    for (std::uint32_t r = 0; r < world; ++r) {
      std::int64_t* target = r == 0 ? sums.data() : digits.data();
      exact_encode(slot(r), plan, target);
      if (r == 0) continue;
      for (std::size_t i = 0; i < plan.words; ++i) sums[i] += digits[i];
    }
    exact_round(sums.data(), plan, op, out + begin, dtype);
  }
}

void check_stacked_table(const char* who, std::uint32_t world, std::size_t slot_stride,
                         std::size_t n) {
  RV_ENFORCE_GE(InputError, world, 1u, std::string(who) + ": world size");
  RV_ENFORCE_LE(InputError, world, exact::kMaxWorld,
                std::string(who) + ": the largest world is 2^20");
  if (world > 1) {
    RV_ENFORCE_GE(InputError, slot_stride, n,
                  std::string(who) + ": the slot stride is shorter than a slot");
  }
}

}  // namespace rv
