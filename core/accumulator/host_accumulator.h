// The exact gradient accumulator on the host (GradientAccumulator over rv::ExactAccumulator,
// core/exact/exact_accumulator.h): bf16 and f16 addends widened exactly to binary32
// (core/dtype_arrays.h), the last plan kept with its storage reused, and a world of one finished
// as its own agreement, plan, export and finish.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/accumulator/gradient_accumulator.h"
#include "core/exact/exact_accumulator.h"

namespace rv {

class HostAccumulator final : public GradientAccumulator {
 public:
  explicit HostAccumulator(std::size_t count);
  std::size_t count() const override { return accumulator_.count(); }
  void add(const void* values, std::size_t offset, std::size_t n, DType dtype,
           void* stream) override;
  void end_micro_batch() override { accumulator_.end_micro_batch(); }
  void clear(void* stream) override;
  std::size_t agreement_size() const override { return accumulator_.agreement_size(); }
  void agreement_words(std::int64_t layout, Op op, std::uint64_t mean_over, std::int64_t* words,
                       void* stream) override;
  std::size_t plan(const std::int64_t* agreed, std::uint32_t world) override;
  void export_digits(std::int64_t* words, void* stream) override;
  void finish(const std::int64_t* summed, Op op, std::uint64_t mean_over, DType dtype, void* out,
              void* stream) override;
  void finish_alone(Op op, std::uint64_t mean_over, DType dtype, void* out, void* stream) override;
  void footprint(std::size_t* bytes, std::size_t* wide, std::size_t* flagged) const override;

 private:
  const AccumulatorPlan& planned() const;
  ExactAccumulator accumulator_;
  AccumulatorPlan plan_;  // the last plan (its storage reused), valid while planned_
  bool planned_ = false;
  std::vector<float> widened_;           // a half-precision add's values as binary32, reused
  std::vector<std::int64_t> own_words_;  // finish_alone's agreement and digit words, reused
};

}  // namespace rv
