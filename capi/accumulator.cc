// The C ABI's exact gradient accumulator (reduce_verify_c.h, rv_accumulator_*): the entry
// points' checks, and the host implementation over rv::ExactAccumulator.
#include <memory>
#include <string>
#include <vector>

#include "capi/accumulator_handle.h"
#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "capi/stacked_arguments.h"
#include "core/dtype_arrays.h"
#include "core/error.h"
#include "core/exact/exact_accumulator.h"

namespace {

using rv::DType;
using rv::InputError;

class HostAccumulator final : public rv_accumulator {
 public:
  explicit HostAccumulator(std::size_t count) : accumulator_(count) {}
  std::size_t count() const override { return accumulator_.count(); }
  void add(const void* values, std::size_t offset, std::size_t n, DType dtype, void*) override {
    if (dtype == DType::kF32) {
      accumulator_.add(static_cast<const float*>(values), offset, n);
      return;
    }
    // Every bf16 and f16 value is a binary32 value: the widened copy adds the same numbers.
    widened_.resize(n);
    rv::widen_into(values, n, dtype, widened_.data());
    accumulator_.add(widened_.data(), offset, n);
  }
  void end_micro_batch() override { accumulator_.end_micro_batch(); }
  void clear(void*) override {
    accumulator_.clear();
    planned_ = false;  // plan_ keeps its storage for the next step's plan
  }
  std::size_t agreement_size() const override { return accumulator_.agreement_size(); }
  void agreement_words(std::int64_t layout, rv::Op op, std::uint64_t mean_over, std::int64_t* words,
                       void*) override {
    accumulator_.agreement_words(layout, op, mean_over, words);
  }
  std::size_t plan(const std::int64_t* agreed, std::uint32_t world) override {
    planned_ = false;  // until plan_ is whole again
    accumulator_.plan_into(agreed, world, plan_);
    planned_ = true;
    return plan_.words;
  }
  void export_digits(std::int64_t* words, void*) override {
    accumulator_.export_digits(planned(), words);
  }
  void finish(const std::int64_t* summed, rv::Op op, std::uint64_t mean_over, DType dtype,
              void* out, void*) override {
    if (dtype == DType::kF32) {
      rv::finish_accumulated(planned(), summed, op, mean_over, accumulator_.count(),
                             static_cast<float*>(out));
      return;
    }
    // Rounded once, directly to the dtype, then written as its bytes (an exact narrowing).
    std::vector<float> widened(accumulator_.count());
    rv::finish_accumulated(planned(), summed, op, mean_over, widened.size(), widened.data(), dtype);
    rv::narrow_into(widened.data(), widened.size(), dtype, out);
  }
  void finish_alone(rv::Op op, std::uint64_t mean_over, DType dtype, void* out,
                    void* stream) override {
    // On the host the rounds cost no more than the finish: they run as a world of one's.
    own_words_.resize(accumulator_.agreement_size());
    accumulator_.agreement_words(0, op, mean_over, own_words_.data());
    plan(own_words_.data(), 1);
    own_words_.resize(plan_.words);
    accumulator_.export_digits(plan_, own_words_.data());
    finish(own_words_.data(), op, mean_over, dtype, out, stream);
  }
  void footprint(std::size_t* bytes, std::size_t* wide, std::size_t* flagged) const override {
    *bytes = accumulator_.bytes();
    *wide = accumulator_.wide_blocks();
    *flagged = accumulator_.flagged_blocks();
  }

 private:
  const rv::AccumulatorPlan& planned() const {
    if (!planned_) throw InputError("no plan yet: call rv_accumulator_plan with the agreed words");
    return plan_;
  }
  rv::ExactAccumulator accumulator_;
  rv::AccumulatorPlan plan_;  // the last plan (its storage reused), valid while planned_
  bool planned_ = false;
  std::vector<float> widened_;           // a half-precision add's values as binary32, reused
  std::vector<std::int64_t> own_words_;  // finish_alone's agreement and digit words, reused
};

rv_accumulator& checked(rv_accumulator* a) {
  if (a == nullptr) throw InputError("the accumulator is a null pointer");
  return *a;
}
const rv_accumulator& checked(const rv_accumulator* a) {
  if (a == nullptr) throw InputError("the accumulator is a null pointer");
  return *a;
}
void non_null(const void* p, const char* what) {
  if (p == nullptr) throw InputError(std::string(what) + " is a null pointer");
}

}  // namespace

extern "C" rv_status rv_accumulator_create(size_t count, int device, rv_accumulator** out) {
  return rv::capi::guarded("rv_accumulator_create", [&] {
    non_null(out, "out");
    *out = nullptr;
    if (device < -1) throw InputError("device " + std::to_string(device) + " (−1: the host)");
    std::unique_ptr<rv_accumulator> made = device == -1
                                               ? std::make_unique<HostAccumulator>(count)
                                               : rv::capi::make_cuda_accumulator(count, device);
    *out = made.release();
  });
}

extern "C" rv_status rv_accumulator_destroy(rv_accumulator* accumulator) {
  return rv::capi::guarded("rv_accumulator_destroy", [&] { delete accumulator; });
}

extern "C" rv_status rv_accumulator_add(rv_accumulator* accumulator, const float* values,
                                        size_t offset, size_t n, void* cuda_stream) {
  return rv::capi::guarded("rv_accumulator_add", [&] {
    rv_accumulator& a = checked(accumulator);
    if (n != 0) non_null(values, "values");
    a.add(values, offset, n, DType::kF32, cuda_stream);
  });
}

extern "C" rv_status rv_accumulator_add_dtype(rv_accumulator* accumulator, const void* values,
                                              size_t offset, size_t n, int dtype,
                                              void* cuda_stream) {
  return rv::capi::guarded("rv_accumulator_add_dtype", [&] {
    const DType type = rv::capi::dtype_from_c(dtype);
    rv_accumulator& a = checked(accumulator);
    if (n != 0) non_null(values, "values");
    a.add(values, offset, n, type, cuda_stream);
  });
}

extern "C" rv_status rv_accumulator_end_micro_batch(rv_accumulator* accumulator) {
  return rv::capi::guarded("rv_accumulator_end_micro_batch",
                           [&] { checked(accumulator).end_micro_batch(); });
}

extern "C" rv_status rv_accumulator_end_micro_batch_deferred(rv_accumulator* accumulator) {
  return rv::capi::guarded("rv_accumulator_end_micro_batch_deferred",
                           [&] { checked(accumulator).end_micro_batch_deferred(); });
}

extern "C" rv_status rv_accumulator_resolve(rv_accumulator* accumulator) {
  return rv::capi::guarded("rv_accumulator_resolve", [&] { checked(accumulator).resolve(); });
}

extern "C" rv_status rv_accumulator_clear(rv_accumulator* accumulator, void* cuda_stream) {
  return rv::capi::guarded("rv_accumulator_clear",
                           [&] { checked(accumulator).clear(cuda_stream); });
}

extern "C" rv_status rv_accumulator_agreement_size(const rv_accumulator* accumulator,
                                                   size_t* words) {
  return rv::capi::guarded("rv_accumulator_agreement_size", [&] {
    non_null(words, "words");
    *words = checked(accumulator).agreement_size();
  });
}

extern "C" rv_status rv_accumulator_agreement_words(rv_accumulator* accumulator, int64_t layout,
                                                    int op, uint64_t mean_over, int64_t* host_words,
                                                    void* cuda_stream) {
  return rv::capi::guarded("rv_accumulator_agreement_words", [&] {
    const rv::Op parsed = rv::capi::op_from_c(op);
    non_null(host_words, "host_words");
    checked(accumulator).agreement_words(layout, parsed, mean_over, host_words, cuda_stream);
  });
}

extern "C" rv_status rv_accumulator_plan(rv_accumulator* accumulator, const int64_t* host_agreed,
                                         uint32_t world, size_t* digit_words) {
  return rv::capi::guarded("rv_accumulator_plan", [&] {
    non_null(host_agreed, "host_agreed");
    non_null(digit_words, "digit_words");
    *digit_words = checked(accumulator).plan(host_agreed, world);
  });
}

extern "C" rv_status rv_accumulator_export_digits(rv_accumulator* accumulator, int64_t* words,
                                                  void* cuda_stream) {
  return rv::capi::guarded("rv_accumulator_export_digits", [&] {
    non_null(words, "words");
    checked(accumulator).export_digits(words, cuda_stream);
  });
}

extern "C" rv_status rv_accumulator_finish(rv_accumulator* accumulator, const int64_t* summed,
                                           int op, uint64_t mean_over, float* out,
                                           void* cuda_stream) {
  return rv::capi::guarded("rv_accumulator_finish", [&] {
    const rv::Op parsed = rv::capi::op_from_c(op);
    rv_accumulator& a = checked(accumulator);
    non_null(summed, "summed");
    if (a.count() != 0) non_null(out, "out");
    a.finish(summed, parsed, mean_over, DType::kF32, out, cuda_stream);
  });
}

extern "C" rv_status rv_accumulator_finish_dtype(rv_accumulator* accumulator, const int64_t* summed,
                                                 int op, uint64_t mean_over, int dtype, void* out,
                                                 void* cuda_stream) {
  return rv::capi::guarded("rv_accumulator_finish_dtype", [&] {
    const rv::Op parsed = rv::capi::op_from_c(op);
    const DType type = rv::capi::dtype_from_c(dtype);
    rv_accumulator& a = checked(accumulator);
    non_null(summed, "summed");
    if (a.count() != 0) non_null(out, "out");
    a.finish(summed, parsed, mean_over, type, out, cuda_stream);
  });
}

extern "C" rv_status rv_accumulator_finish_alone(rv_accumulator* accumulator, int op,
                                                 uint64_t mean_over, int dtype, void* out,
                                                 void* cuda_stream) {
  return rv::capi::guarded("rv_accumulator_finish_alone", [&] {
    const rv::Op parsed = rv::capi::op_from_c(op);
    const DType type = rv::capi::dtype_from_c(dtype);
    rv_accumulator& a = checked(accumulator);
    if (a.count() != 0) non_null(out, "out");
    a.finish_alone(parsed, mean_over, type, out, cuda_stream);
  });
}

extern "C" rv_status rv_accumulator_footprint(const rv_accumulator* accumulator, size_t* bytes,
                                              size_t* wide_blocks, size_t* flagged_blocks) {
  return rv::capi::guarded("rv_accumulator_footprint", [&] {
    non_null(bytes, "bytes");
    non_null(wide_blocks, "wide_blocks");
    non_null(flagged_blocks, "flagged_blocks");
    checked(accumulator).footprint(bytes, wide_blocks, flagged_blocks);
  });
}
