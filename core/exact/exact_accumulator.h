// Exact gradient accumulation (docs/DESIGN.md §11): float32 arrays added any number of times
// into a running exact sum per element, the sums of all ranks combined through integer
// all-reduces, and the result rounded once, to the sum or to the mean over a count M. Every
// element's result is RN(Σ addends / M) for the addends of every rank, whatever their split
// over ranks, their order and their grouping; special values as the exact contract's law
// (docs/DESIGN.md §2.4).
//
// Storage: one int64 digit per element over a window per block of exact::kBlock elements
// (8 bytes an element), the block's window moved down (digits shifted left) when a smaller
// addend arrives. A block's digits are a slot of a pool taken when the block first needs them
// (an add of a nonzero value, an import of nonzero digits), so that an accumulator holding only
// a few blocks (the GPU accumulator's host copy) costs only their digits; an untouched block
// reads as zero digits. A block whose sums would leave 62 bits turns wide: a 448-bit integer
// per element (56 bytes), its slot given back to the pool. A block that met NaN, ±Inf or −0
// keeps one byte of flags per element.
//
// Combine (the caller owns the collectives, over any transport):
//   1. agreement_words → int64 MAX all-reduce over the ranks;
//   2. plan(agreed, W) → digit_words() int64s;
//   3. export_digits → int64 SUM all-reduce;
//   4. finish(summed, op, M) → the results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/contract.h"
#include "core/dtype.h"
#include "core/exact/exact_law.h"

namespace rv {

// The header of the agreement words: fields every rank must hold equal, each sent as x and −x
// so that one MAX all-reduce yields both the largest and the smallest value.
enum class AccumulatorField : int {
  kMagic = 0,  // a peer that is not an exact accumulator sends other words
  kCount,      // elements
  kLayout,     // the caller's fingerprint of what the elements are (shapes, dtypes)
  kOp,         // 0 sum, 1 mean
  kMeanOver,   // M (0 for a sum)
  kFields
};
inline constexpr int kAccumulatorHeaderWords = 2 * static_cast<int>(AccumulatorField::kFields);
inline constexpr std::int64_t kAccumulatorMagic = 0x52564143;  // "RVAC"
// Bit positions of a block's sums: a bottom complement of kWindowComplement − bottom keeps
// every agreed word non-negative (sums reach beyond bit 276 when many addends are added).
inline constexpr int kWindowComplement = 1023;
// A fast block keeps every digit below 2^kDigitBits in magnitude.
inline constexpr int kDigitBits = 62;
// A block's bottom before any nonzero finite value arrived.
inline constexpr int kNoBottom = 1 << 30;

// What the ranks agreed, as every rank derives it from the max-reduced words.
struct AccumulatorPlan {
  std::uint32_t world = 0;
  int limb_width = 0;
  std::vector<int> bottom;             // per block
  std::vector<int> limbs;              // per block (0: the block sums to zero everywhere)
  std::vector<unsigned char> special;  // per block
  std::vector<std::size_t> offset;     // per block, into the digit words
  std::size_t words = 0;               // digit words, the count of micro-batches included
};

// Where the header of agreed words disagrees: the first field whose max ≠ min, or kFields.
struct HeaderDisagreement {
  AccumulatorField field = AccumulatorField::kFields;
  std::int64_t smallest = 0, largest = 0;
};
HeaderDisagreement find_header_disagreement(const std::int64_t* agreed);
const char* accumulator_field_name(AccumulatorField field);

class ExactAccumulator {
 public:
  explicit ExactAccumulator(std::size_t count);
  ~ExactAccumulator();
  ExactAccumulator(ExactAccumulator&&) noexcept;
  ExactAccumulator& operator=(ExactAccumulator&&) noexcept;

  std::size_t count() const { return count_; }
  std::size_t blocks() const;
  // The micro-batches this rank added (end_micro_batch calls), summed over the ranks by the
  // combine.
  std::uint64_t micro_batches() const { return micro_batches_; }
  // Blocks kept wide and with flags: what this accumulator costs beyond 8 bytes an element.
  std::size_t wide_blocks() const;
  std::size_t flagged_blocks() const;
  // What is allocated: the per-block state, the pool's slots of digits (each exact::kBlock
  // int64s, or count() when that is smaller; taken or free), the wide sums and the flags.
  std::size_t bytes() const;

  // Adds values[0, n) to elements [offset, offset + n). offset is a multiple of
  // exact::kBlock (so a block's adds always cover a prefix of it); offset + n ≤ count.
  void add(const float* values, std::size_t offset, std::size_t n);
  void end_micro_batch() { ++micro_batches_; }
  // Back to the state of a new accumulator: every block's slot goes back to the pool, whose
  // storage is kept for the next adds (a slot is zeroed when a block takes it).
  void clear();

  // Round 1: kAccumulatorHeaderWords + exact::kAgreementWords per block.
  std::size_t agreement_size() const;
  void agreement_words(std::int64_t layout, Op op, std::uint64_t mean_over,
                       std::int64_t* words) const;
  // Round 2: the plan every rank derives from the agreed words (InputError naming the field
  // when the header disagrees, RuntimeFailure for words no rank could have sent).
  AccumulatorPlan plan(const std::int64_t* agreed, std::uint32_t world) const;
  // The same into `plan`, whose vectors keep their storage from one step to the next: a
  // large model's plan is megabytes, and fresh pages each step cost the host (and a GPU
  // waiting for the plan) their faults.
  void plan_into(const std::int64_t* agreed, std::uint32_t world, AccumulatorPlan& plan) const;
  // plan.words int64s: this rank's digits in the agreed windows, and its micro-batch count.
  void export_digits(const AccumulatorPlan& plan, std::int64_t* words) const;

  // Per block, for a device that keeps its common blocks itself and hands the rest to a
  // host accumulator (core/cuda/accumulator/cuda_accumulator.h): a fresh block takes a one-digit
  // state (bottom kNoBottom when nothing nonzero was added; digits of the block's elements), and
  // one block's agreement words or digit words are written alone (at words + plan.offset[b]).
  void import_block(std::size_t block, int bottom, int magnitude_bits, std::uint32_t covered,
                    const std::int64_t* digits);
  void block_agreement_words(std::size_t block, std::int64_t* words) const;
  void export_block(const AccumulatorPlan& plan, std::size_t block, std::int64_t* words) const;

  // One block's state (exact_accumulator.cc).
  struct Block;

 private:
  // Every read of a block's digits goes through digits(b): its slot, or zero digits when it
  // has none. own_digits(b) is the one way to write them: the block's slot, taken from the
  // pool (a free slot zeroed, or a new zeroed one) when it has none.
  const std::int64_t* digits(std::size_t block) const;
  std::int64_t* own_digits(std::size_t block);
  void release_digits(std::size_t block);
  std::size_t slot_elements() const;

  std::size_t count_;
  std::uint64_t micro_batches_ = 0;
  std::vector<Block> blocks_;
  std::vector<std::unique_ptr<std::int64_t[]>> slots_;  // the pool, one allocation a slot
  std::vector<std::uint32_t> free_slots_;               // slots no block holds
};

// InputError unless op is a sum or mean_over is 1 to exact::kMaxWorld: every finish checks it.
void check_mean_over(Op op, std::uint64_t mean_over);
// The micro-batches of every rank, from the summed digit words.
std::uint64_t summed_micro_batches(const AccumulatorPlan& plan, const std::int64_t* summed);
// The results from the summed digit words: RN(S) for op sum, RN(S / mean_over) for op mean
// (1 ≤ mean_over ≤ exact::kMaxWorld), into out[0, plan's count). For bf16 and f16 (the
// accumulated addends were values of that dtype, widened) each result is rounded once,
// directly to the dtype (docs/DESIGN.md §2.5), and written as its binary32 widening.
void finish_accumulated(const AccumulatorPlan& plan, const std::int64_t* summed, Op op,
                        std::uint64_t mean_over, std::size_t count, float* out,
                        DType dtype = DType::kF32);

// The same for one block: its summed words (summed + plan.offset[block]) into its results
// (out + block × kBlock), each rounded once to `dtype` and written as its binary32 widening.
void finish_accumulated_block(const AccumulatorPlan& plan, std::size_t block,
                              const std::int64_t* summed, Op op, std::uint64_t mean_over,
                              std::size_t count, float* out, DType dtype = DType::kF32);

// The whole combine over accumulators held in one process (the tests' world, and a trainer
// whose ranks are one process): every round as the collectives would compute it.
std::vector<float> reduce_in_process(const std::vector<const ExactAccumulator*>& ranks, Op op,
                                     std::uint64_t mean_over);

}  // namespace rv
