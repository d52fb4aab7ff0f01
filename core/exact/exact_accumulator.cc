#include "core/exact/exact_accumulator.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/exact/exact_plan.h"
#include "core/exact/host_exact.h"
#include "core/exact/host_vector_targets.h"

namespace rv {

namespace {
constexpr std::uint32_t kNoSlot = 0xFFFFFFFFu;  // a block without digits
}  // namespace

// A block's state. Its digits (its slot of the pool, or zero without one) are the exact sums
// of every addend so far, in units of 2^bottom × 2^-149, each below 2^kDigitBits in
// magnitude; or, once wide, the sums are 448-bit two's complement integers in units of 2^-149
// (and the block holds no slot).
struct ExactAccumulator::Block {
  int bottom;             // kNoBottom until a nonzero finite value arrives
  int magnitude_bits;     // ≥ the bit length of every |digit|
  std::uint32_t covered;  // elements [0, covered) received at least one addend
  // Its slot of the pool (kNoSlot: none, every digit zero). clear gives the slots back, so the
  // GPU accumulator's host copy, which takes over only the rare blocks the GPU cannot hold,
  // clears in O(blocks) and holds only the slots of the blocks moved since.
  std::uint32_t slot = kNoSlot;
  std::unique_ptr<exact::ExactSum[]> wide;
  // Per element: bit 0 +Inf or NaN seen, bit 1 −Inf or NaN seen, bit 2 a value other than −0.
  std::unique_ptr<unsigned char[]> flags;
};

namespace {

constexpr std::size_t kBlock = exact::kBlock;
// The digits of a block without a slot.
constexpr std::int64_t kZeroDigits[kBlock] = {};

struct Scan {
  std::uint32_t largest;            // the largest finite magnitude (bits), 0: none nonzero
  std::uint32_t smallest_less_one;  // the smallest nonzero magnitude − 1 (±0 wraps away)
  std::uint32_t special;            // nonzero when a NaN, ±Inf or −0 is among the values
};

// One pass of branch-free reductions the compiler vectorises.
RV_LOOP_BODY Scan scan_body(const float* __restrict x, std::size_t n) {
  std::uint32_t largest = 0, smallest_less_one = 0xFFFFFFFFu, special = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
    // A mask, not a select: GCC does not vectorise a select feeding a max reduction here.
    const std::uint32_t finite_magnitude =
        magnitude & (0u - static_cast<std::uint32_t>(magnitude < 0x7F800000u));
    largest = std::max(largest, finite_magnitude);
    smallest_less_one = std::min(smallest_less_one, magnitude - 1u);
    special |= (magnitude >= 0x7F800000u ? 1u : 0u) | (bits == 0x80000000u ? 1u : 0u);
  }
  return Scan{largest, smallest_less_one, special};
}

// digits[i] = digits[i] × 2^shift + x[i] in units of 2^bottom; returns the OR of the new
// |digits|. The caller proved every result below 2^kDigitBits and bottom ≤ the lowest bit
// any nonzero x[i] can have (its biased exponent − 1, or 0), so no shift below is negative
// for a nonzero value and none reaches 64.
RV_LOOP_BODY std::uint64_t add_body(const float* __restrict x, std::size_t n,
                                    std::int64_t* __restrict digits, int shift, int bottom) {
  // 32-bit lanes widened once to 64 bits: the form the compiler vectorises (AVX2's variable
  // 64-bit shifts).
  std::uint64_t any = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    const std::uint32_t exponent = (bits >> 23) & 0xFFu;
    const std::uint32_t normal = exponent != 0 ? 1u : 0u;
    const bool finite = exponent != 0xFFu;
    std::uint32_t significand = finite ? ((bits & 0x7FFFFFu) | (normal << 23)) : 0u;
    std::int32_t position = static_cast<std::int32_t>(exponent - normal) - bottom;
    position = (finite && position > 0) ? position : 0;
    const std::uint64_t k = static_cast<std::uint64_t>(significand)
                            << static_cast<std::uint32_t>(position);
    const std::int64_t sign = static_cast<std::int64_t>(static_cast<std::int32_t>(bits) >> 31);
    const std::uint64_t v =
        (k ^ static_cast<std::uint64_t>(sign)) - static_cast<std::uint64_t>(sign);
    const std::uint64_t sum = (static_cast<std::uint64_t>(digits[i]) << shift) + v;
    digits[i] = static_cast<std::int64_t>(sum);
    const std::uint64_t negative = static_cast<std::uint64_t>(static_cast<std::int64_t>(sum) >> 63);
    any |= (sum ^ negative) - negative;
  }
  return any;
}

Scan scan_baseline(const float* x, std::size_t n) { return scan_body(x, n); }
std::uint64_t add_baseline(const float* x, std::size_t n, std::int64_t* d, int shift, int bottom) {
  return add_body(x, n, d, shift, bottom);
}
#if defined(RV_HOST_EXACT_AVX2)
RV_TARGET_AVX2 Scan scan_avx2(const float* x, std::size_t n) { return scan_body(x, n); }
RV_TARGET_AVX2 std::uint64_t add_avx2(const float* x, std::size_t n, std::int64_t* d, int shift,
                                      int bottom) {
  return add_body(x, n, d, shift, bottom);
}
#endif

struct Loops {
  Scan (*scan)(const float*, std::size_t);
  std::uint64_t (*add)(const float*, std::size_t, std::int64_t*, int, int);
};

const Loops& loops() {
  static const Loops chosen = [] {
#if defined(RV_HOST_EXACT_AVX2)
    if (detail::host_isa_available(detail::HostIsa::kAvx2)) return Loops{scan_avx2, add_avx2};
#endif
    return Loops{scan_baseline, add_baseline};
  }();
  return chosen;
}

int bit_length64(std::uint64_t v) { return v == 0 ? 0 : 64 - exact::count_leading_zeros64(v); }

// The lowest bit a nonzero magnitude can have: its biased exponent − 1, 0 for a subnormal. A
// bound, not the lowest set bit: the window needs only to hold every bit.
int lowest_possible_bit(std::uint32_t magnitude) {
  const int exponent = static_cast<int>(magnitude >> 23);
  return exponent == 0 ? 0 : exponent - 1;
}

void add_wide(exact::ExactSum* wide, const float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    if (!exact::is_finite_bits(bits)) continue;
    const exact::Magnitude m = exact::magnitude_of(bits);
    if (m.significand == 0) continue;
    const auto s = static_cast<std::int64_t>(m.significand);
    exact::add_shifted(wide[i], (bits >> 31) != 0 ? -s : s, m.shift);
  }
}

void update_flags(unsigned char* flags, const float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
    const bool nan = magnitude > 0x7F800000u;
    const bool negative = (bits >> 31) != 0;
    const bool pos_inf = nan || (magnitude == 0x7F800000u && !negative);
    const bool neg_inf = nan || (magnitude == 0x7F800000u && negative);
    flags[i] |= static_cast<unsigned char>(pos_inf | (neg_inf << 1) | ((bits != 0x80000000u) << 2));
  }
}

// |S| of a wide sum in 8 little-endian words, and its sign.
bool wide_magnitude(const exact::ExactSum& s, std::uint64_t* magnitude) {
  const bool negative = (s.word[exact::kSumWords - 1] >> 63) != 0;
  std::uint64_t borrow = 1;
  for (int i = 0; i < exact::kSumWords; ++i) {
    std::uint64_t v = s.word[i];
    if (negative) {
      v = ~v + borrow;
      borrow = (borrow != 0 && v == 0) ? 1u : 0u;
    }
    magnitude[i] = v;
  }
  magnitude[exact::kSumWords] = 0;
  return negative;
}

// Bits [position, position + width) of an 8-word magnitude (width ≤ 62).
std::uint64_t bits_at(const std::uint64_t* magnitude, int position, int width) {
  const int w = position / 64, b = position % 64;
  if (w >= exact::kSumWords + 1) return 0;
  std::uint64_t v = magnitude[w] >> b;
  if (b != 0 && w + 1 < exact::kSumWords + 1) v |= magnitude[w + 1] << (64 - b);
  return v & ((std::uint64_t{1} << width) - 1);
}

std::size_t block_elements(std::size_t count, std::size_t block) {
  return std::min(kBlock, count - block * kBlock);
}

}  // namespace

const char* accumulator_field_name(AccumulatorField field) {
  switch (field) {
    case AccumulatorField::kMagic:
      return "magic (a peer that is not an exact accumulator)";
    case AccumulatorField::kCount:
      return "accumulator length";
    case AccumulatorField::kLayout:
      return "layout (parameter shapes and dtypes)";
    case AccumulatorField::kOp:
      return "op";
    case AccumulatorField::kMeanOver:
      return "mean_over";
    case AccumulatorField::kFields:
      break;
  }
  return "none";
}

HeaderDisagreement find_header_disagreement(const std::int64_t* agreed) {
  for (int f = 0; f < static_cast<int>(AccumulatorField::kFields); ++f) {
    const std::int64_t largest = agreed[2 * f], smallest = -agreed[2 * f + 1];
    if (largest != smallest)
      return HeaderDisagreement{static_cast<AccumulatorField>(f), smallest, largest};
  }
  return HeaderDisagreement{};
}

ExactAccumulator::ExactAccumulator(std::size_t count)
    : count_(count), blocks_((count + kBlock - 1) / kBlock) {
  if (blocks_.size() >= kNoSlot) {
    throw InputError(detail::concat("ExactAccumulator: ", count, " elements (at most ",
                                    std::size_t{kNoSlot - 1} * kBlock, ")"));
  }
  clear();
}
ExactAccumulator::~ExactAccumulator() = default;
ExactAccumulator::ExactAccumulator(ExactAccumulator&&) noexcept = default;
ExactAccumulator& ExactAccumulator::operator=(ExactAccumulator&&) noexcept = default;

void ExactAccumulator::clear() {
  // From the last block down, so that adds in block order take the slots back in that order.
  for (std::size_t index = blocks_.size(); index-- > 0;) {
    release_digits(index);
    Block& b = blocks_[index];
    b.bottom = kNoBottom;
    b.magnitude_bits = 0;
    b.covered = 0;
    b.wide.reset();
    b.flags.reset();
  }
  micro_batches_ = 0;
}

std::size_t ExactAccumulator::blocks() const { return blocks_.size(); }

std::size_t ExactAccumulator::slot_elements() const { return std::min(count_, kBlock); }

const std::int64_t* ExactAccumulator::digits(std::size_t b) const {
  const std::uint32_t slot = blocks_[b].slot;
  return slot == kNoSlot ? kZeroDigits : slots_[slot].get();
}

std::int64_t* ExactAccumulator::own_digits(std::size_t b) {
  Block& block = blocks_[b];
  if (block.slot == kNoSlot) {
    if (free_slots_.empty()) {
      slots_.emplace_back(new std::int64_t[slot_elements()]());
      // Room to give every slot back, so that a release (clear) never allocates.
      free_slots_.reserve(slots_.capacity());
      block.slot = static_cast<std::uint32_t>(slots_.size() - 1);
    } else {
      block.slot = free_slots_.back();
      free_slots_.pop_back();
      std::fill_n(slots_[block.slot].get(), slot_elements(), 0);
    }
  }
  return slots_[block.slot].get();
}

void ExactAccumulator::release_digits(std::size_t b) {
  Block& block = blocks_[b];
  if (block.slot == kNoSlot) return;
  free_slots_.push_back(block.slot);
  block.slot = kNoSlot;
}

std::size_t ExactAccumulator::wide_blocks() const {
  return static_cast<std::size_t>(std::count_if(blocks_.begin(), blocks_.end(),
                                                [](const Block& b) { return b.wide != nullptr; }));
}
std::size_t ExactAccumulator::flagged_blocks() const {
  return static_cast<std::size_t>(std::count_if(blocks_.begin(), blocks_.end(),
                                                [](const Block& b) { return b.flags != nullptr; }));
}
std::size_t ExactAccumulator::bytes() const {
  std::size_t total =
      blocks_.size() * sizeof(Block) + slots_.size() * slot_elements() * sizeof(std::int64_t) +
      slots_.capacity() * sizeof(slots_[0]) + free_slots_.capacity() * sizeof(std::uint32_t);
  for (std::size_t b = 0; b < blocks_.size(); ++b) {
    const std::size_t n = block_elements(count_, b);
    if (blocks_[b].wide) total += n * sizeof(exact::ExactSum);
    if (blocks_[b].flags) total += n;
  }
  return total;
}

void ExactAccumulator::add(const float* values, std::size_t offset, std::size_t n) {
  if (offset % kBlock != 0) {
    throw InputError(detail::concat("ExactAccumulator::add: offset ", offset,
                                    " is not a multiple of ", kBlock,
                                    " (each range must start a block)"));
  }
  if (offset > count_ || n > count_ - offset) {
    throw InputError(detail::concat("ExactAccumulator::add: elements [", offset, ", ", offset + n,
                                    ") lie beyond the accumulator's ", count_));
  }
  if (n != 0 && values == nullptr) throw InputError("ExactAccumulator::add: values is null");
  const Loops& loop = loops();
  for (std::size_t done = 0; done < n; done += kBlock) {
    const std::size_t index = (offset + done) / kBlock;
    const std::size_t c = std::min(kBlock, n - done);
    const std::size_t elements = block_elements(count_, index);
    const float* x = values + done;
    Block& block = blocks_[index];

    const Scan scan = loop.scan(x, c);
    if (scan.special != 0 && !block.flags) {
      // Every value before this one was neither NaN, ±Inf nor −0.
      block.flags.reset(new unsigned char[elements]);
      for (std::size_t i = 0; i < elements; ++i) block.flags[i] = i < block.covered ? 4 : 0;
    }
    if (block.flags) update_flags(block.flags.get(), x, c);
    block.covered = std::max(block.covered, static_cast<std::uint32_t>(c));
    if (scan.largest == 0) continue;  // nothing but zeros and specials

    const int top = exact::top_position(exact::magnitude_of(scan.largest));
    const int lowest = lowest_possible_bit(scan.smallest_less_one + 1);
    if (!block.wide) {
      const int bottom = std::min(block.bottom, lowest);
      const int shift = block.magnitude_bits == 0 ? 0 : block.bottom - bottom;
      const int needed =
          std::max(block.magnitude_bits == 0 ? 0 : block.magnitude_bits + shift, top - bottom + 1) +
          1;
      if (needed <= kDigitBits) {
        std::int64_t* digits = own_digits(index);
        std::uint64_t any = loop.add(x, c, digits, shift, bottom);
        int bits = bit_length64(any);
        if (c < elements) {  // the rest of the block keeps its digits, shifted with the window
          std::uint64_t rest = 0;
          for (std::size_t i = c; i < elements; ++i) {
            digits[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(digits[i]) << shift);
            rest |= static_cast<std::uint64_t>(digits[i] < 0 ? -digits[i] : digits[i]);
          }
          bits = std::max(bits, bit_length64(rest));
        }
        block.bottom = bottom;
        block.magnitude_bits = bits;
        continue;
      }
      // Past 62 bits: the block turns wide, its digits carried over exactly and its slot
      // given back.
      block.wide.reset(new exact::ExactSum[elements]());
      if (block.magnitude_bits != 0) {
        const std::int64_t* digits = this->digits(index);
        for (std::size_t i = 0; i < elements; ++i) {
          if (digits[i] != 0) exact::add_shifted(block.wide[i], digits[i], block.bottom);
        }
      }
      release_digits(index);
    }
    add_wide(block.wide.get(), x, c);
    block.bottom = std::min(block.bottom, lowest);
  }
}

void ExactAccumulator::import_block(std::size_t b, int bottom, int magnitude_bits,
                                    std::uint32_t covered, const std::int64_t* digits) {
  if (b >= blocks_.size()) throw InputError("ExactAccumulator::import_block: no such block");
  Block& block = blocks_[b];
  if (block.wide || block.flags || block.covered != 0) {
    throw InternalError("ExactAccumulator::import_block: the block already holds addends");
  }
  block.bottom = bottom;
  block.magnitude_bits = magnitude_bits;
  block.covered = covered;
  // Zero digits need no slot (the GPU moves blocks whose first addends held a special value).
  const std::size_t n = block_elements(count_, b);
  if (std::any_of(digits, digits + n, [](std::int64_t d) { return d != 0; })) {
    std::memcpy(own_digits(b), digits, n * sizeof(std::int64_t));
  } else {
    release_digits(b);
  }
}

std::size_t ExactAccumulator::agreement_size() const {
  return kAccumulatorHeaderWords + exact::kAgreementWords * blocks_.size();
}

void ExactAccumulator::agreement_words(std::int64_t layout, Op op, std::uint64_t mean_over,
                                       std::int64_t* words) const {
  const std::int64_t header[] = {kAccumulatorMagic, static_cast<std::int64_t>(count_), layout,
                                 op == Op::kMean ? 1 : 0,
                                 op == Op::kMean ? static_cast<std::int64_t>(mean_over) : 0};
  for (int f = 0; f < static_cast<int>(AccumulatorField::kFields); ++f) {
    words[2 * f] = header[f];
    words[2 * f + 1] = -header[f];
  }
  std::int64_t* w = words + kAccumulatorHeaderWords;
  for (std::size_t b = 0; b < blocks_.size(); ++b, w += exact::kAgreementWords) {
    block_agreement_words(b, w);
  }
}

void ExactAccumulator::block_agreement_words(std::size_t b, std::int64_t* w) const {
  const Block& block = blocks_[b];
  int top = -1;
  if (block.wide) {
    std::uint64_t magnitude[exact::kSumWords + 1];
    for (std::size_t i = 0; i < block_elements(count_, b); ++i) {
      wide_magnitude(block.wide[i], magnitude);
      for (int k = exact::kSumWords; k >= 0; --k) {
        if (magnitude[k] != 0) {
          top = std::max(top, k * 64 + bit_length64(magnitude[k]) - 1);
          break;
        }
      }
    }
  } else if (block.magnitude_bits != 0) {
    top = block.bottom + block.magnitude_bits - 1;
  }
  w[0] = top;
  w[1] = top < 0 ? -1 : kWindowComplement - block.bottom;
  w[2] = block.flags ? 1 : 0;
}

AccumulatorPlan ExactAccumulator::plan(const std::int64_t* agreed, std::uint32_t world) const {
  AccumulatorPlan plan;
  plan_into(agreed, world, plan);
  return plan;
}

void ExactAccumulator::plan_into(const std::int64_t* agreed, std::uint32_t world,
                                 AccumulatorPlan& plan) const {
  const HeaderDisagreement d = find_header_disagreement(agreed);
  if (d.field != AccumulatorField::kFields) {
    throw InputError(detail::concat("the ranks' exact accumulators disagree on their ",
                                    accumulator_field_name(d.field), ": from ", d.smallest, " to ",
                                    d.largest, ", before any gradient moved"));
  }
  if (agreed[0] != kAccumulatorMagic || agreed[2] != static_cast<std::int64_t>(count_)) {
    throw InputError(detail::concat("the agreed accumulator header (magic ", agreed[0], ", length ",
                                    agreed[2], ") is not this accumulator's (length ", count_,
                                    ")"));
  }
  if (world < 1 || world > exact::kMaxWorld) {
    throw InputError(detail::concat("exact accumulator: a world of ", world,
                                    " ranks (1 to 2^20 are supported)"));
  }
  plan.world = world;
  plan.limb_width = exact::limb_bits(world);
  const std::size_t n_blocks = blocks_.size();
  plan.bottom.resize(n_blocks);
  plan.limbs.resize(n_blocks);
  plan.special.resize(n_blocks);
  plan.offset.resize(n_blocks);
  std::size_t words = 1;  // word 0: the micro-batches
  const std::int64_t* w = agreed + kAccumulatorHeaderWords;
  for (std::size_t b = 0; b < n_blocks; ++b, w += exact::kAgreementWords) {
    const std::int64_t top = w[0], complement = w[1], special = w[2];
    const bool valid = top >= -1 && top <= kWindowComplement && complement >= -1 &&
                       complement <= kWindowComplement && (top < 0) == (complement < 0) &&
                       (special == 0 || special == 1) &&
                       (top < 0 || kWindowComplement - complement <= top) &&
                       (top < 0 || top - (kWindowComplement - complement) <= 400);
    if (!valid) {
      throw RuntimeFailure(detail::concat("exact accumulator: the agreed words of block ", b, " (",
                                          top, ", ", complement, ", ", special, ") are no rank's"));
    }
    plan.bottom[b] = top < 0 ? 0 : kWindowComplement - static_cast<int>(complement);
    const int width = top < 0 ? 0 : static_cast<int>(top) - plan.bottom[b] + 1;
    plan.limbs[b] = (width + plan.limb_width - 1) / plan.limb_width;
    plan.special[b] = static_cast<unsigned char>(special);
    plan.offset[b] = words;
    words += (plan.limbs[b] + plan.special[b]) * block_elements(count_, b);
  }
  plan.words = words;
}

void ExactAccumulator::export_digits(const AccumulatorPlan& plan, std::int64_t* words) const {
  words[0] = static_cast<std::int64_t>(micro_batches_);
  for (std::size_t b = 0; b < blocks_.size(); ++b) export_block(plan, b, words + plan.offset[b]);
}

void ExactAccumulator::export_block(const AccumulatorPlan& plan, std::size_t b,
                                    std::int64_t* out) const {
  const int L = plan.limb_width;
  const Block& block = blocks_[b];
  const std::size_t n = block_elements(count_, b);
  const int limbs = plan.limbs[b];
  const std::int64_t* digits = this->digits(b);
  if (limbs == 1 && !block.wide) {
    // The common case: the digit moved to the agreed bottom (no rank's bits lie below it,
    // and the window's width ≤ L bounds the result).
    const int shift = block.magnitude_bits == 0 ? 0 : block.bottom - plan.bottom[b];
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(digits[i]) << shift);
    }
  } else if (limbs > 0) {
    std::uint64_t magnitude[exact::kSumWords + 1];
    for (std::size_t i = 0; i < n; ++i) {
      bool negative;
      int position;  // of magnitude's bit 0
      if (block.wide) {
        negative = wide_magnitude(block.wide[i], magnitude);
        position = 0;
      } else {
        std::fill(magnitude, magnitude + exact::kSumWords + 1, 0);
        negative = digits[i] < 0;
        magnitude[0] = negative ? 0 - static_cast<std::uint64_t>(digits[i])
                                : static_cast<std::uint64_t>(digits[i]);
        position = block.magnitude_bits == 0 ? plan.bottom[b] : block.bottom;
      }
      // Digit j holds bits [bottom + jL, bottom + (j + 1)L); relative to the magnitude's
      // bit 0 that is bottom − position + jL, where bottom ≥ position only for wide sums
      // (position 0) and bottom ≤ position for digits (then the low bits are zero).
      for (int j = 0; j < limbs; ++j) {
        const int from = plan.bottom[b] - position + j * L;
        std::uint64_t v;
        if (from >= 0) {
          v = bits_at(magnitude, from, L);
        } else if (from + L <= 0) {
          v = 0;
        } else {
          v = (magnitude[0] << (-from)) & ((std::uint64_t{1} << L) - 1);
          // The bits of magnitude above L + from move to the next limb, read there.
        }
        out[static_cast<std::size_t>(j) * n + i] =
            negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
      }
    }
  }
  if (plan.special[b] != 0) {
    std::int64_t* special = out + static_cast<std::size_t>(limbs) * n;
    const int f = exact::kSpecialFieldBits;
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned flags = block.flags ? block.flags[i] : (i < block.covered ? 4u : 0u);
      special[i] = static_cast<std::int64_t>(flags & 1u) |
                   (static_cast<std::int64_t>((flags >> 1) & 1u) << f) |
                   (static_cast<std::int64_t>((flags >> 2) & 1u) << (2 * f));
    }
  }
}

void check_mean_over(Op op, std::uint64_t mean_over) {
  if (op == Op::kMean && (mean_over == 0 || mean_over > exact::kMaxWorld)) {
    throw InputError(detail::concat("exact accumulator: mean_over = ", mean_over,
                                    " (a mean over 1 to 2^20 addends)"));
  }
}

std::uint64_t summed_micro_batches(const AccumulatorPlan&, const std::int64_t* summed) {
  return static_cast<std::uint64_t>(summed[0]);
}

void finish_accumulated(const AccumulatorPlan& plan, const std::int64_t* summed, Op op,
                        std::uint64_t mean_over, std::size_t count, float* out, DType dtype) {
  check_mean_over(op, mean_over);
  const bool mean = op == Op::kMean;
  // The summed words are the exact contract's buffer (docs/DESIGN.md §2.4) with M in W's
  // place as the mean's divisor: its vectorised round (host_exact.h) applies, one-limb blocks
  // in double where that is proven exact, every other block by the law.
  ExactPlan contract_plan;
  contract_plan.world = static_cast<std::uint32_t>(mean ? mean_over : 1);
  contract_plan.limb_bits = plan.limb_width;
  contract_plan.count = count;
  contract_plan.words = plan.words;
  contract_plan.blocks.resize(plan.limbs.size());
  for (std::size_t b = 0; b < plan.limbs.size(); ++b) {
    contract_plan.blocks[b] = ExactBlockSlot{
        static_cast<std::int64_t>(plan.offset[b]), static_cast<std::int32_t>(plan.bottom[b]),
        static_cast<std::int16_t>(plan.limbs[b]), static_cast<std::int16_t>(plan.special[b])};
  }
  exact_round(summed, contract_plan, op, out, dtype);
}

namespace {

// finish_accumulated_block in the format F: the law's rounding straight to F, written widened.
template <class F>
void finish_block_in(const AccumulatorPlan& plan, std::size_t b, const std::int64_t* in, Op op,
                     std::uint64_t mean_over, std::size_t count, float* o) {
  check_mean_over(op, mean_over);
  const bool mean = op == Op::kMean;
  const auto divisor = static_cast<std::uint32_t>(mean ? mean_over : 1);
  const std::size_t n = block_elements(count, b);
  const int limbs = plan.limbs[b];
  const bool special = plan.special[b] != 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    if (!special && limbs == 0) {
      bits = 0;
    } else if (!special && limbs == 1) {
      bits = exact::round_one_limb<F>(in[i], plan.bottom[b], divisor, mean);
    } else {
      exact::ExactSum s{};
      for (int j = 0; j < limbs; ++j) {
        exact::add_shifted(s, in[static_cast<std::size_t>(j) * n + i], j * plan.limb_width);
      }
      const std::int64_t word = special ? in[static_cast<std::size_t>(limbs) * n + i] : 0;
      bits = exact::round_exact_sum<F>(s, plan.bottom[b], divisor, mean, special, word);
    }
    o[i] = widen_format<F>(bits);
  }
}

}  // namespace

void finish_accumulated_block(const AccumulatorPlan& plan, std::size_t b, const std::int64_t* in,
                              Op op, std::uint64_t mean_over, std::size_t count, float* o,
                              DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return finish_block_in<Binary32Format>(plan, b, in, op, mean_over, count, o);
    case DType::kBF16:
      return finish_block_in<BFloat16Format>(plan, b, in, op, mean_over, count, o);
    case DType::kF16:
      return finish_block_in<Float16Format>(plan, b, in, op, mean_over, count, o);
  }
}

std::vector<float> reduce_in_process(const std::vector<const ExactAccumulator*>& ranks, Op op,
                                     std::uint64_t mean_over) {
  if (ranks.empty()) throw InputError("reduce_in_process: no accumulators");
  const auto world = static_cast<std::uint32_t>(ranks.size());
  std::vector<std::int64_t> agreed(ranks[0]->agreement_size(), INT64_MIN);
  for (const ExactAccumulator* rank : ranks) {
    if (rank->agreement_size() != agreed.size()) {
      throw InputError("reduce_in_process: accumulators of other lengths");
    }
    std::vector<std::int64_t> words(agreed.size());
    rank->agreement_words(0, op, mean_over, words.data());
    for (std::size_t i = 0; i < words.size(); ++i) agreed[i] = std::max(agreed[i], words[i]);
  }
  const AccumulatorPlan plan = ranks[0]->plan(agreed.data(), world);
  std::vector<std::int64_t> summed(plan.words, 0), digits(plan.words);
  for (const ExactAccumulator* rank : ranks) {
    rank->export_digits(rank->plan(agreed.data(), world), digits.data());
    for (std::size_t i = 0; i < digits.size(); ++i) {
      summed[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(summed[i]) +
                                            static_cast<std::uint64_t>(digits[i]));
    }
  }
  std::vector<float> out(ranks[0]->count());
  finish_accumulated(plan, summed.data(), op, mean_over, out.size(), out.data());
  return out;
}

}  // namespace rv
