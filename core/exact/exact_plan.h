// The layout of one exact all-reduce (docs/DESIGN.md §2): from the agreed words of every block,
// each block's window and where its limbs sit in the int64 buffer the library sums. Every
// rank derives the same plan from the same agreed words, so the buffers line up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rv {

// One block's part of the int64 buffer: `limbs` arrays of `count` digits (limb-major), then,
// when special, one array of `count` special words.
struct ExactBlockSlot {
  std::int64_t offset;  // first int64 of the block in the buffer
  std::int32_t bottom;  // bit position of limb 0's lowest bit (units of 2^-149)
  std::int16_t limbs;
  std::int16_t special;  // 1: special words follow the limbs
};

struct ExactPlan {
  std::uint32_t world = 1;
  int limb_bits = 62;
  std::size_t count = 0;  // elements covered, from a block-aligned start
  std::vector<ExactBlockSlot> blocks;
  std::size_t words = 0;  // int64 words of the whole buffer

  // Elements of block b (the last one may be short).
  std::size_t block_count(std::size_t b) const;
};

// The blocks of n elements and their agreement words (3 per block).
std::size_t exact_block_count(std::size_t n);

// agreed: exact::kAgreementWords words per block, max-reduced over the ranks.
ExactPlan plan_exact_blocks(const std::int64_t* agreed, std::size_t n, std::uint32_t world);

}  // namespace rv
