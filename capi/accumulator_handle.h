// The object behind the C ABI's rv_accumulator: one interface, a host implementation over
// core/exact/exact_accumulator.h (capi/accumulator.cc) and a CUDA one over
// core/cuda/accumulator/cuda_accumulator.h (capi/cuda_accumulator.cc; capi/cuda_unavailable.cc
// without CUDA). The entry points check their arguments before they reach it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "capi/reduce_verify_c.h"
#include "core/contract.h"
#include "core/dtype.h"

struct rv_accumulator {
  virtual ~rv_accumulator() = default;
  virtual std::size_t count() const = 0;
  // values: n elements of `dtype` (2 bytes each for bf16 and f16), widened exactly.
  virtual void add(const void* values, std::size_t offset, std::size_t n, rv::DType dtype,
                   void* stream) = 0;
  virtual void end_micro_batch() = 0;
  // end_micro_batch without a wait where the adds are enqueued (a device); resolve() settles
  // what it left. The host's adds are done when they return: the same as end_micro_batch.
  virtual void end_micro_batch_deferred() { end_micro_batch(); }
  virtual void resolve() {}
  virtual void clear(void* stream) = 0;
  virtual std::size_t agreement_size() const = 0;
  virtual void agreement_words(std::int64_t layout, rv::Op op, std::uint64_t mean_over,
                               std::int64_t* host_words, void* stream) = 0;
  // Returns the digit words.
  virtual std::size_t plan(const std::int64_t* host_agreed, std::uint32_t world) = 0;
  virtual void export_digits(std::int64_t* words, void* stream) = 0;
  // out: count elements of `dtype`, each the sum rounded once to it.
  virtual void finish(const std::int64_t* summed, rv::Op op, std::uint64_t mean_over,
                      rv::DType dtype, void* out, void* stream) = 0;
  // A world of one, in place of agreement_words, plan, export_digits and finish: its own sums
  // are the world's.
  virtual void finish_alone(rv::Op op, std::uint64_t mean_over, rv::DType dtype, void* out,
                            void* stream) = 0;
  virtual void footprint(std::size_t* bytes, std::size_t* wide, std::size_t* flagged) const = 0;
};

namespace rv::capi {
// Throws Unsupported in a library built without CUDA.
std::unique_ptr<rv_accumulator> make_cuda_accumulator(std::size_t count, int device);
}  // namespace rv::capi
