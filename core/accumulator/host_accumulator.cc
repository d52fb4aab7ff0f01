#include "core/accumulator/host_accumulator.h"

#include <vector>

#include "core/dtype_arrays.h"
#include "core/error.h"

namespace rv {

HostAccumulator::HostAccumulator(std::size_t count) : accumulator_(count) {}

void HostAccumulator::add(const void* values, std::size_t offset, std::size_t n, DType dtype,
                          void*) {
  if (dtype == DType::kF32) {
    accumulator_.add(static_cast<const float*>(values), offset, n);
    return;
  }
  // Every bf16 and f16 value is a binary32 value: the widened copy adds the same numbers.
  widened_.resize(n);
  widen_into(values, n, dtype, widened_.data());
  accumulator_.add(widened_.data(), offset, n);
}

void HostAccumulator::clear(void*) {
  accumulator_.clear();
  planned_ = false;  // plan_ keeps its storage for the next step's plan
}

void HostAccumulator::agreement_words(std::int64_t layout, Op op, std::uint64_t mean_over,
                                      std::int64_t* words, void*) {
  accumulator_.agreement_words(layout, op, mean_over, words);
}

std::size_t HostAccumulator::plan(const std::int64_t* agreed, std::uint32_t world) {
  planned_ = false;  // until plan_ is whole again
  accumulator_.plan_into(agreed, world, plan_);
  planned_ = true;
  return plan_.words;
}

void HostAccumulator::export_digits(std::int64_t* words, void*) {
  accumulator_.export_digits(planned(), words);
}

void HostAccumulator::finish(const std::int64_t* summed, Op op, std::uint64_t mean_over,
                             DType dtype, void* out, void*) {
  if (dtype == DType::kF32) {
    finish_accumulated(planned(), summed, op, mean_over, accumulator_.count(),
                       static_cast<float*>(out));
    return;
  }
  // Rounded once, directly to the dtype, then written as its bytes (an exact narrowing).
  std::vector<float> widened(accumulator_.count());
  finish_accumulated(planned(), summed, op, mean_over, widened.size(), widened.data(), dtype);
  narrow_into(widened.data(), widened.size(), dtype, out);
}

void HostAccumulator::finish_alone(Op op, std::uint64_t mean_over, DType dtype, void* out,
                                   void* stream) {
  // On the host the rounds cost no more than the finish: they run as a world of one's.
  own_words_.resize(accumulator_.agreement_size());
  accumulator_.agreement_words(0, op, mean_over, own_words_.data());
  plan(own_words_.data(), 1);
  own_words_.resize(plan_.words);
  accumulator_.export_digits(plan_, own_words_.data());
  finish(own_words_.data(), op, mean_over, dtype, out, stream);
}

void HostAccumulator::footprint(std::size_t* bytes, std::size_t* wide, std::size_t* flagged) const {
  *bytes = accumulator_.bytes();
  *wide = accumulator_.wide_blocks();
  *flagged = accumulator_.flagged_blocks();
}

const AccumulatorPlan& HostAccumulator::planned() const {
  if (!planned_) throw InputError("no plan yet: call rv_accumulator_plan with the agreed words");
  return plan_;
}

}  // namespace rv
