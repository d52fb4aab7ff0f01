// The C ABI's exact gradient accumulator (reduce_verify_c.h, rv_accumulator_*): the entry
// points' checks, in front of core/accumulator's GradientAccumulator (HostAccumulator for
// device −1, else rv::CudaAccumulator through make_cuda_accumulator).
#include <memory>
#include <string>

#include "capi/accumulator_handle.h"
#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "capi/stacked_arguments.h"
#include "core/accumulator/gradient_accumulator.h"
#include "core/accumulator/host_accumulator.h"
#include "core/error.h"

namespace {

using rv::DType;
using rv::InputError;

rv::GradientAccumulator& checked(rv_accumulator* a) {
  if (a == nullptr) throw InputError("the accumulator is a null pointer");
  return *a->accumulator;
}
const rv::GradientAccumulator& checked(const rv_accumulator* a) {
  if (a == nullptr) throw InputError("the accumulator is a null pointer");
  return *a->accumulator;
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
    auto made = std::make_unique<rv_accumulator>();
    made->accumulator = device == -1 ? std::make_unique<rv::HostAccumulator>(count)
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
    rv::GradientAccumulator& a = checked(accumulator);
    if (n != 0) non_null(values, "values");
    a.add(values, offset, n, DType::kF32, cuda_stream);
  });
}

extern "C" rv_status rv_accumulator_add_dtype(rv_accumulator* accumulator, const void* values,
                                              size_t offset, size_t n, int dtype,
                                              void* cuda_stream) {
  return rv::capi::guarded("rv_accumulator_add_dtype", [&] {
    const DType type = rv::capi::dtype_from_c(dtype);
    rv::GradientAccumulator& a = checked(accumulator);
    if (n != 0) non_null(values, "values");
    a.add(values, offset, n, type, cuda_stream);
  });
}

extern "C" rv_status rv_accumulator_add_rows(rv_accumulator* accumulator, const void* values,
                                             size_t row_stride, size_t rows, size_t offset,
                                             size_t n, int dtype, void* cuda_stream) {
  return rv::capi::guarded("rv_accumulator_add_rows", [&] {
    const DType type = rv::capi::dtype_from_c(dtype);
    rv::GradientAccumulator& a = checked(accumulator);
    if (n != 0 && rows != 0) non_null(values, "values");
    a.add_rows(values, row_stride, rows, offset, n, type, cuda_stream);
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
    rv::GradientAccumulator& a = checked(accumulator);
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
    rv::GradientAccumulator& a = checked(accumulator);
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
    rv::GradientAccumulator& a = checked(accumulator);
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
