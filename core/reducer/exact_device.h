// Where the exact reducer's element work runs: the host (core/exact/host_exact.h) or one GPU
// (core/cuda/exact/exact_kernel.h, the exact_*_kernel.cu files). The exact reducer is written once
// against this interface and a Transport, as the fixed-order reducer is against FixedOrderDevice.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"
#include "core/dtype.h"
#include "core/exact/exact_plan.h"
#include "core/reducer/device_kind.h"

namespace rv {

class ExactDevice {
 public:
  virtual ~ExactDevice() = default;
  // "cpu" or "cuda:<index> <device name>"
  virtual const char* name() const = 0;
  virtual DeviceKind kind() const = 0;
  // int64 scratch in this device's memory (never null, even for n = 0); freed by free_words.
  virtual std::int64_t* allocate_words(std::size_t n) = 0;
  virtual void free_words(std::int64_t* p) = 0;
  // The agreement words of n values (exact_block_count(n) × exact::kAgreementWords).
  virtual void agreement_words(const float* values, std::size_t n, std::int64_t* words) = 0;
  // Copies n words from this device's memory to the host, after all work issued.
  virtual void download_words(std::int64_t* host, const std::int64_t* words, std::size_t n) = 0;
  // The plan.words digits of plan.count values (host_exact.h's exact_encode, bit for bit).
  virtual void encode(const float* values, const ExactPlan& plan, std::int64_t* words) = 0;
  // The plan.count results from the summed words (host_exact.h's exact_round, bit for bit),
  // rounded to `dtype` and written as its binary32 widening (docs/DESIGN.md §2.5).
  virtual void round(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out,
                     DType dtype) = 0;
  // Waits until all work issued on this device is done.
  virtual void synchronize() = 0;

  // The reduce-scatter (docs/DESIGN.md §2.6) moves addends, not digits: each owner reduces a
  // stacked table of the W ranks' copies of its shard. Float scratch in this device's memory
  // (never null, even for n = 0), freed by free_values.
  virtual float* allocate_values(std::size_t n);
  virtual void free_values(float* p);
  // The exact contract over that table: slot r at stacked + r × slot_stride (≥ n for W > 1),
  // n values each, the results rounded to `dtype`, widened, into out: the bits of
  // core/exact/exact_reduction.h's exact_reduce_stacked. A device without these (the GPU's
  // come with issue 38's CUDA part) refuses with an InternalError naming itself.
  virtual void reduce_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride,
                              std::size_t n, Op op, float* out, DType dtype);
};

// The host: core/exact/host_exact.h's functions over host memory.
ExactDevice& host_exact_device();

}  // namespace rv
