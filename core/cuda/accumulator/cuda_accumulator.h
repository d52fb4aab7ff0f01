// The exact gradient accumulator on one GPU (docs/DESIGN.md §11): the digits and block states
// in device memory, added by core/cuda/accumulator/accumulator_kernel.h; blocks the device cannot
// keep in one digit (past 62 bits, or NaN, ±Inf, −0) move to a host ExactAccumulator and stay
// there, so the bits are the host's law whatever the data. The combine's rounds are the host
// accumulator's (agreement words, plan, digit words, finish), with device pointers for the digit
// words and the results. It implements core/accumulator's GradientAccumulator, as
// HostAccumulator does on the host. No CUDA types here.
//
// bf16 and f16: an add widens the values on the device (core/cuda/dtype_kernel.h, exact) into
// a binary32 copy that the binary32 add adds; the copy is kept until the add is settled, since
// a settle may read the values again. The finish rounds each exact sum once, straight to the
// dtype, on the device (core/cuda/accumulator/accumulator_kernel.h), as for f32: no host round
// trip unless a block lives on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/accumulator/gradient_accumulator.h"
#include "core/contract.h"
#include "core/cuda/device_buffer.h"
#include "core/dtype.h"
#include "core/exact/exact_accumulator.h"

namespace rv {

// The kernels' views of the state (core/cuda/accumulator/accumulator_kernel.h, included by the
// .cc only: the kernel launchers are not part of the installed headers).
struct DeviceAccumulatorState;
struct DeviceAccumulatorPlan;

class CudaAccumulator final : public GradientAccumulator {
 public:
  CudaAccumulator(int device, std::size_t count);
  ~CudaAccumulator() override;
  CudaAccumulator(const CudaAccumulator&) = delete;
  CudaAccumulator& operator=(const CudaAccumulator&) = delete;
  std::size_t count() const override { return count_; }
  int device() const { return device_; }

  // d_values: a device pointer; the call returns once the add is enqueued. The blocks the
  // device cannot keep are taken over by the host when the adds are settled: d_values must
  // stay valid until then (end_micro_batch, agreement_words, plan, or an add overlapping a
  // pending one settle; settling reads one word back, one wait per micro-batch).
  void add(const float* d_values, std::size_t offset, std::size_t n, void* cuda_stream);
  // d_values: n elements of `dtype` on the device; bf16 and f16 are widened into a binary32
  // copy that this accumulator keeps until the add is settled (the caller's values may go once
  // the widening has run on cuda_stream).
  void add(const void* d_values, std::size_t offset, std::size_t n, DType dtype,
           void* cuda_stream) override;
  // Rows of a table in one launch (GradientAccumulator::add_rows), settled as one add: a
  // block whose window cannot take every row is left to the host for all of them. bf16 and f16
  // rows are widened into one binary32 table kept until the settle (rows × n × 4 bytes).
  void add_rows(const float* d_values, std::size_t row_stride, std::size_t rows, std::size_t offset,
                std::size_t n, void* cuda_stream);
  void add_rows(const void* d_values, std::size_t row_stride, std::size_t rows, std::size_t offset,
                std::size_t n, DType dtype, void* cuda_stream) override;
  void settle();
  void end_micro_batch() override {
    settle();
    host_.end_micro_batch();
    widened_.clear();
  }
  // The same without a wait: counts the micro-batch and enqueues, behind the pending adds, a
  // read-back of the flag that says whether any of them left a block for the host. resolve()
  // (called by the next add, by a settle, or by the caller once the device is past those
  // adds, e.g. after the next forward pass) waits for that read-back alone: with no block for
  // the host the adds are done and forgotten, else they are settled as end_micro_batch would.
  // Their values must stay valid until resolve() returns. Pending adds on more than one
  // stream are settled at once. With widened copies pending: end_micro_batch.
  void end_micro_batch_deferred() override;
  void resolve() override;
  void clear(void* cuda_stream) override;

  std::size_t agreement_size() const override { return host_.agreement_size(); }
  void agreement_words(std::int64_t layout, Op op, std::uint64_t mean_over,
                       std::int64_t* host_words, void* cuda_stream) override;
  std::size_t plan(const std::int64_t* host_agreed, std::uint32_t world) override;
  // d_words, d_summed, d_out: device pointers; enqueued on cuda_stream, with no wait (the plan
  // is uploaded to the device on export_digits' stream, which finish's must be ordered after:
  // d_summed is made from d_words). finish waits only where a block lives on the host.
  void export_digits(std::int64_t* d_words, void* cuda_stream) override;
  // d_out: count() elements of `dtype`, each result rounded once to it (docs/DESIGN.md §2.5)
  // on the device; bf16 and f16 results are 2-byte elements.
  void finish(const std::int64_t* d_summed, Op op, std::uint64_t mean_over, DType dtype,
              void* d_out, void* cuda_stream) override;
  // A world of one, in place of the three rounds (no agreement, plan or digit words): the
  // results finish would give from the words of a plan of its own agreement words, rounded
  // from the digits in place. Enqueued before the last micro-batch's adds are resolved, so the
  // host's wait for their read-back overlaps the rounding; waits only where a block lives on
  // the host. clear() next.
  void finish_alone(Op op, std::uint64_t mean_over, DType dtype, void* d_out,
                    void* cuda_stream) override;
  // bytes(), and the host copy's wide and flagged blocks.
  void footprint(std::size_t* total_bytes, std::size_t* wide, std::size_t* flagged) const override;

  // The plan of the last plan() (InputError before one): the layout of the summed words.
  const AccumulatorPlan& planned() const;

  std::size_t host_blocks() const;
  std::size_t bytes() const;
  const ExactAccumulator& host() const { return host_; }

 private:
  // InputError for a range that does not start a block or runs past count(), or rows that
  // overlap (GradientAccumulator::check_rows).
  void check_add(std::size_t offset, std::size_t n, std::size_t row_stride, std::size_t rows) const;
  // The checked rows' one launch, after settling any pending add it overlaps.
  void enqueue_rows(const float* d_values, std::size_t row_stride, std::size_t rows,
                    std::size_t offset, std::size_t n, void* cuda_stream);
  DeviceAccumulatorState state() const;
  DeviceAccumulatorPlan device_plan() const;
  void download_states(void* cuda_stream);
  void upload_plan(void* cuda_stream);
  void move_to_host(std::size_t block, void* cuda_stream);
  // Block b's results from its words under plan_, rounded on the host to `dtype` and copied
  // into d_out (elements of that dtype).
  void finish_host_block(std::size_t b, const std::int64_t* words, Op op, std::uint64_t mean_over,
                         DType dtype, void* d_out, void* cuda_stream);

  struct PendingAdd {
    const float* values;
    std::size_t row_stride, rows;  // one launch's rows, row r at values + r × row_stride
    std::size_t offset, n;
    void* stream;
  };

  // The bf16 and f16 adds' binary32 copies, kept until their adds are settled. Declared first,
  // so destroyed last: no pending add outlives its copy.
  std::vector<DeviceBuffer> widened_;
  int device_;
  std::size_t count_, blocks_;
  std::vector<PendingAdd> pending_;
  // end_micro_batch_deferred's read-back: the first checked_adds_ of pending_ are covered by
  // the flag copied to check_flag_ (pinned) before check_event_ (a cudaEvent_t).
  std::size_t checked_adds_ = 0;
  std::uint32_t* check_flag_ = nullptr;
  void* check_event_ = nullptr;
  DeviceBuffer digits_, bottom_, magnitude_bits_, covered_, residence_, host_needed_;
  DeviceBuffer plan_kind_, plan_bottom_, plan_offset_;
  ExactAccumulator host_;
  AccumulatorPlan plan_;  // the last plan (its storage reused), valid while planned_
  bool planned_ = false;
  std::vector<std::uint32_t> residence_host_;  // a copy of residence_, kept current by add
  std::vector<std::int32_t> bottom_host_, bits_host_;
  std::vector<std::uint32_t> covered_host_;
  std::vector<std::uint8_t> kind_host_;
  bool states_fresh_ = false;   // the *_host_ copies of the block states are current
  bool plan_uploaded_ = false;  // plan_kind_, plan_bottom_, plan_offset_ hold plan_
};

}  // namespace rv
