// The exact gradient accumulator's one interface (docs/design-accumulation.md): a running exact
// sum per element of float32, bf16 or f16 arrays, the ranks' sums combined in three int64
// all-reduces that the caller owns (agreement words, MAX; digit words, SUM), rounded once.
// Two implementations: HostAccumulator (core/accumulator/host_accumulator.h, over
// core/exact/exact_accumulator.h) and, in a build with CUDA, CudaAccumulator
// (core/cuda/accumulator/cuda_accumulator.h). Each writes its own finish_alone. The C ABI's
// rv_accumulator (capi/accumulator.cc) holds one and checks the arguments before they reach it.
// No CUDA types here: a stream is a cudaStream_t passed as void* (ignored on the host).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"
#include "core/dtype.h"

namespace rv {

class GradientAccumulator {
 public:
  virtual ~GradientAccumulator() = default;
  virtual std::size_t count() const = 0;
  // values: n elements of `dtype` (2 bytes each for bf16 and f16), widened exactly.
  virtual void add(const void* values, std::size_t offset, std::size_t n, DType dtype,
                   void* stream) = 0;
  // `rows` arrays of n elements, row r at values + r × row_stride elements (row_stride ≥ n when
  // rows > 1): the same sums as rows adds of one row each, in one call (a device adds them in
  // one launch and settles them once, where the adds one by one each wait for the last).
  virtual void add_rows(const void* values, std::size_t row_stride, std::size_t rows,
                        std::size_t offset, std::size_t n, DType dtype, void* stream);
  virtual void end_micro_batch() = 0;
  // end_micro_batch without a wait where the adds are enqueued (a device); resolve() settles
  // what it left. The host's adds are done when they return: the same as end_micro_batch.
  virtual void end_micro_batch_deferred() { end_micro_batch(); }
  virtual void resolve() {}
  virtual void clear(void* stream) = 0;
  virtual std::size_t agreement_size() const = 0;
  virtual void agreement_words(std::int64_t layout, Op op, std::uint64_t mean_over,
                               std::int64_t* host_words, void* stream) = 0;
  // Returns the digit words.
  virtual std::size_t plan(const std::int64_t* host_agreed, std::uint32_t world) = 0;
  virtual void export_digits(std::int64_t* words, void* stream) = 0;
  // out: count elements of `dtype`, each the sum rounded once to it.
  virtual void finish(const std::int64_t* summed, Op op, std::uint64_t mean_over, DType dtype,
                      void* out, void* stream) = 0;
  // A world of one, in place of agreement_words, plan, export_digits and finish: its own sums
  // are the world's.
  virtual void finish_alone(Op op, std::uint64_t mean_over, DType dtype, void* out,
                            void* stream) = 0;
  virtual void footprint(std::size_t* bytes, std::size_t* wide, std::size_t* flagged) const = 0;

 protected:
  // InputError naming `who` for rows that overlap (row_stride < n with rows > 1) or whose
  // span does not fit in a size_t of bytes.
  static void check_rows(const char* who, std::size_t row_stride, std::size_t rows, std::size_t n);
};

}  // namespace rv
