#include "core/cuda/accumulator/cuda_accumulator.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <utility>

#include "core/cuda/accumulator/accumulator_kernel.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/dtype_kernel.h"
#include "core/dtype_arrays.h"
#include "core/error.h"

namespace rv {
namespace {

constexpr std::size_t kBlock = exact::kBlock;

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

std::size_t block_elements(std::size_t count, std::size_t b) {
  return std::min(kBlock, count - b * kBlock);
}

}  // namespace

CudaAccumulator::CudaAccumulator(int device, std::size_t count)
    : device_(device),
      count_(count),
      blocks_((count + kBlock - 1) / kBlock),
      digits_(device, count * sizeof(std::int64_t)),
      bottom_(device, blocks_ * sizeof(std::int32_t)),
      magnitude_bits_(device, blocks_ * sizeof(std::int32_t)),
      covered_(device, blocks_ * sizeof(std::uint32_t)),
      residence_(device, blocks_ * sizeof(std::uint32_t)),
      host_needed_(device, sizeof(std::uint32_t)),
      plan_kind_(device, blocks_),
      plan_bottom_(device, blocks_ * sizeof(std::int32_t)),
      plan_offset_(device, blocks_ * sizeof(std::uint64_t)),
      host_(count) {
  clear(nullptr);
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaDeviceSynchronize());
}

CudaAccumulator::~CudaAccumulator() {
  const cuda_detail::ScopedDevice scope(device_);
  if (check_event_ != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(check_event_));
  if (check_flag_ != nullptr) (void)cudaFreeHost(check_flag_);
}

DeviceAccumulatorState CudaAccumulator::state() const {
  DeviceAccumulatorState s;
  s.digits = static_cast<std::int64_t*>(digits_.data());
  s.bottom = static_cast<std::int32_t*>(bottom_.data());
  s.magnitude_bits = static_cast<std::int32_t*>(magnitude_bits_.data());
  s.covered = static_cast<std::uint32_t*>(covered_.data());
  s.residence = static_cast<std::uint32_t*>(residence_.data());
  s.host_needed = static_cast<std::uint32_t*>(host_needed_.data());
  s.count = count_;
  return s;
}

DeviceAccumulatorPlan CudaAccumulator::device_plan() const {
  DeviceAccumulatorPlan p;
  p.kind = static_cast<const std::uint8_t*>(plan_kind_.data());
  p.bottom = static_cast<const std::int32_t*>(plan_bottom_.data());
  p.offset = static_cast<const std::uint64_t*>(plan_offset_.data());
  p.blocks = blocks_;
  return p;
}

void CudaAccumulator::clear(void* cuda_stream) {
  const cuda_detail::ScopedDevice scope(device_);
  for (const PendingAdd& p : pending_) RV_CUDA_CHECK(cudaStreamSynchronize(as_stream(p.stream)));
  pending_.clear();  // discarded with everything else
  checked_adds_ = 0;
  const cudaStream_t stream = as_stream(cuda_stream);
  // The digits are not zeroed (8 bytes an element of writes a step): a block whose
  // magnitude_bits is 0 holds zero digits, and no kernel reads them
  // (core/cuda/accumulator/accumulator_kernel.h).
  RV_CUDA_CHECK(cudaMemsetAsync(magnitude_bits_.data(), 0, magnitude_bits_.bytes(), stream));
  RV_CUDA_CHECK(cudaMemsetAsync(covered_.data(), 0, covered_.bytes(), stream));
  RV_CUDA_CHECK(cudaMemsetAsync(residence_.data(), 0, residence_.bytes(), stream));
  RV_CUDA_CHECK(cudaMemsetAsync(host_needed_.data(), 0, host_needed_.bytes(), stream));
  launch_accumulator_reset_bottoms(static_cast<std::int32_t*>(bottom_.data()), blocks_, stream);
  // No wait: the next step's adds are queued behind these on the same stream.
  states_fresh_ = false;
  residence_host_.assign(blocks_, kOnDevice);
  host_.clear();
  planned_ = false;  // plan_ keeps its storage for the next step's plan
  plan_uploaded_ = false;
  widened_.clear();  // the pending adds were waited for above
}

void CudaAccumulator::move_to_host(std::size_t b, void* cuda_stream) {
  const cudaStream_t stream = as_stream(cuda_stream);
  std::vector<std::int64_t> digits(block_elements(count_, b));
  std::int32_t bottom = 0, bits = 0;
  std::uint32_t covered = 0;
  RV_CUDA_CHECK(cudaMemcpyAsync(&bottom, state().bottom + b, 4, cudaMemcpyDeviceToHost, stream));
  RV_CUDA_CHECK(
      cudaMemcpyAsync(&bits, state().magnitude_bits + b, 4, cudaMemcpyDeviceToHost, stream));
  RV_CUDA_CHECK(cudaMemcpyAsync(&covered, state().covered + b, 4, cudaMemcpyDeviceToHost, stream));
  RV_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (bits != 0) {  // else the digits are zero, whatever the memory holds since clear
    RV_CUDA_CHECK(cudaMemcpyAsync(digits.data(), state().digits + b * kBlock,
                                  digits.size() * sizeof(std::int64_t), cudaMemcpyDeviceToHost,
                                  stream));
    RV_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  host_.import_block(b, bottom, bits, covered, digits.data());
  residence_host_[b] = kOnHost;
}

void CudaAccumulator::add(const float* d_values, std::size_t offset, std::size_t n,
                          void* cuda_stream) {
  add_rows(d_values, n, 1, offset, n, cuda_stream);
}

void CudaAccumulator::check_add(std::size_t offset, std::size_t n, std::size_t row_stride,
                                std::size_t rows) const {
  if (offset % kBlock != 0 || offset > count_ || n > count_ - offset) {
    throw InputError(detail::concat("CudaAccumulator::add: elements [", offset, ", ", offset + n,
                                    ") of ", count_, " (a range starts a block of ", kBlock, ")"));
  }
  check_rows("CudaAccumulator::add_rows", row_stride, rows, n);
}

void CudaAccumulator::add_rows(const float* d_values, std::size_t row_stride, std::size_t rows,
                               std::size_t offset, std::size_t n, void* cuda_stream) {
  check_add(offset, n, row_stride, rows);
  enqueue_rows(d_values, row_stride, rows, offset, n, cuda_stream);
}

void CudaAccumulator::enqueue_rows(const float* d_values, std::size_t row_stride, std::size_t rows,
                                   std::size_t offset, std::size_t n, void* cuda_stream) {
  if (n == 0 || rows == 0) return;
  resolve();  // the last micro-batch's adds, as a rule long done: no wait for this one's work
  // A block another pending add marked for the host must be taken over first: the next
  // launch would skip it too, and settle could not tell which launch skipped what.
  for (const PendingAdd& p : pending_) {
    if (offset < p.offset + p.n && p.offset < offset + n) {
      settle();
      break;
    }
  }
  const cuda_detail::ScopedDevice scope(device_);
  launch_accumulator_add(state(), d_values, row_stride, rows, offset, n, cuda_stream);
  states_fresh_ = false;
  pending_.push_back(PendingAdd{d_values, row_stride, rows, offset, n, cuda_stream});
}

void CudaAccumulator::add(const void* d_values, std::size_t offset, std::size_t n, DType dtype,
                          void* cuda_stream) {
  add_rows(d_values, n, 1, offset, n, dtype, cuda_stream);
}

void CudaAccumulator::add_rows(const void* d_values, std::size_t row_stride, std::size_t rows,
                               std::size_t offset, std::size_t n, DType dtype, void* cuda_stream) {
  check_add(offset, n, row_stride, rows);  // before any widening
  if (dtype == DType::kF32) {
    enqueue_rows(static_cast<const float*>(d_values), row_stride, rows, offset, n, cuda_stream);
    return;
  }
  if (n == 0 || rows == 0) return;
  const cuda_detail::ScopedDevice scope(device_);
  // The rows widened into one binary32 table of rows × n (a row apart n floats).
  DeviceBuffer widened(device_, rows * n * sizeof(float));
  if (row_stride == n) {
    launch_widen(d_values, rows * n, dtype, widened.floats(), cuda_stream);
  } else {
    const auto* bytes = static_cast<const unsigned char*>(d_values);
    for (std::size_t r = 0; r < rows; ++r) {
      launch_widen(bytes + r * row_stride * 2, n, dtype, widened.floats() + r * n, cuda_stream);
    }
  }
  enqueue_rows(widened.floats(), n, rows, offset, n, cuda_stream);
  widened_.push_back(std::move(widened));
}

void CudaAccumulator::end_micro_batch_deferred() {
  if (!widened_.empty()) {  // the widened copies live until a settle: settle now
    end_micro_batch();
    return;
  }
  resolve();  // one read-back in flight at a time
  host_.end_micro_batch();
  if (pending_.empty()) return;
  void* stream = pending_.front().stream;
  for (const PendingAdd& p : pending_) {
    if (p.stream != stream) {
      settle();
      return;
    }
  }
  const cuda_detail::ScopedDevice scope(device_);
  if (check_flag_ == nullptr) {
    RV_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&check_flag_), sizeof(std::uint32_t)));
    cudaEvent_t event = nullptr;
    RV_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    check_event_ = event;
  }
  RV_CUDA_CHECK(cudaMemcpyAsync(check_flag_, host_needed_.data(), sizeof(std::uint32_t),
                                cudaMemcpyDeviceToHost, as_stream(stream)));
  RV_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(check_event_), as_stream(stream)));
  checked_adds_ = pending_.size();
}

void CudaAccumulator::resolve() {
  if (checked_adds_ == 0) return;
  const std::size_t checked = checked_adds_;
  checked_adds_ = 0;
  const cuda_detail::ScopedDevice scope(device_);
  RV_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(check_event_)));
  if (*check_flag_ == 0) {
    // No add up to the read-back skipped or marked a block: all of them are in the digits.
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(checked));
  } else {
    settle();
  }
}

void CudaAccumulator::settle() {
  checked_adds_ = 0;  // everything pending is settled here
  if (pending_.empty()) return;
  const cuda_detail::ScopedDevice scope(device_);
  for (const PendingAdd& p : pending_) RV_CUDA_CHECK(cudaStreamSynchronize(as_stream(p.stream)));
  const cudaStream_t stream = as_stream(pending_.back().stream);
  std::uint32_t needed = 0;
  RV_CUDA_CHECK(cudaMemcpyAsync(&needed, host_needed_.data(), 4, cudaMemcpyDeviceToHost, stream));
  RV_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (needed != 0) {
    RV_CUDA_CHECK(cudaMemsetAsync(host_needed_.data(), 0, 4, stream));
    std::vector<std::uint32_t> residence(blocks_);
    RV_CUDA_CHECK(cudaMemcpyAsync(residence.data(), residence_.data(), blocks_ * 4,
                                  cudaMemcpyDeviceToHost, stream));
    RV_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<float> chunk(kBlock);
    // The pending ranges are disjoint: each block was left untouched by the one launch that
    // covered it, or added there.
    for (const PendingAdd& p : pending_) {
      const std::size_t first = p.offset / kBlock, last = (p.offset + p.n + kBlock - 1) / kBlock;
      for (std::size_t b = first; b < last; ++b) {
        if (residence[b] == kOnDevice) continue;
        if (residence[b] == kToHost) move_to_host(b, p.stream);
        residence[b] = kOnHost;
        const std::size_t begin = b * kBlock - p.offset;
        const std::size_t c = std::min(kBlock, p.n - begin);
        for (std::size_t r = 0; r < p.rows; ++r) {  // the launch left every row to the host
          RV_CUDA_CHECK(cudaMemcpyAsync(chunk.data(), p.values + r * p.row_stride + begin,
                                        c * sizeof(float), cudaMemcpyDeviceToHost, stream));
          RV_CUDA_CHECK(cudaStreamSynchronize(stream));
          host_.add(chunk.data(), b * kBlock, c);
        }
      }
    }
    RV_CUDA_CHECK(cudaMemcpyAsync(residence_.data(), residence.data(), blocks_ * 4,
                                  cudaMemcpyHostToDevice, stream));
    RV_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  pending_.clear();
}

void CudaAccumulator::download_states(void* cuda_stream) {
  if (states_fresh_) return;  // nothing was added or cleared since the last download
  const cudaStream_t stream = as_stream(cuda_stream);
  bottom_host_.resize(blocks_);
  bits_host_.resize(blocks_);
  covered_host_.resize(blocks_);
  RV_CUDA_CHECK(cudaMemcpyAsync(bottom_host_.data(), bottom_.data(), blocks_ * 4,
                                cudaMemcpyDeviceToHost, stream));
  RV_CUDA_CHECK(cudaMemcpyAsync(bits_host_.data(), magnitude_bits_.data(), blocks_ * 4,
                                cudaMemcpyDeviceToHost, stream));
  RV_CUDA_CHECK(cudaMemcpyAsync(residence_host_.data(), residence_.data(), blocks_ * 4,
                                cudaMemcpyDeviceToHost, stream));
  RV_CUDA_CHECK(cudaStreamSynchronize(stream));
  states_fresh_ = true;
}

void CudaAccumulator::agreement_words(std::int64_t layout, Op op, std::uint64_t mean_over,
                                      std::int64_t* words, void* cuda_stream) {
  settle();
  const cuda_detail::ScopedDevice scope(device_);
  download_states(cuda_stream);
  host_.agreement_words(layout, op, mean_over, words);
  std::int64_t* w = words + kAccumulatorHeaderWords;
  for (std::size_t b = 0; b < blocks_; ++b, w += exact::kAgreementWords) {
    if (residence_host_[b] != kOnDevice) continue;
    const int bits = bits_host_[b];
    w[0] = bits == 0 ? -1 : bottom_host_[b] + bits - 1;
    w[1] = bits == 0 ? -1 : kWindowComplement - bottom_host_[b];
    w[2] = 0;
  }
  widened_.clear();  // settled above
}

std::size_t CudaAccumulator::plan(const std::int64_t* agreed, std::uint32_t world) {
  settle();
  const cuda_detail::ScopedDevice scope(device_);
  planned_ = false;  // until plan_ is whole again
  host_.plan_into(agreed, world, plan_);
  planned_ = true;
  kind_host_.resize(blocks_);
  for (std::size_t b = 0; b < blocks_; ++b) {
    const bool general = plan_.special[b] != 0 || plan_.limbs[b] > 1;
    kind_host_[b] = general ? kSkip : plan_.limbs[b] == 0 ? kZero : kOneLimb;
  }
  download_states(nullptr);
  for (std::size_t b = 0; b < blocks_; ++b) {
    // The device exports one-limb windows only; the host takes the blocks of the others.
    if (kind_host_[b] == kSkip && residence_host_[b] == kOnDevice) {
      move_to_host(b, nullptr);
      const std::uint32_t on_host = kOnHost;
      RV_CUDA_CHECK(cudaMemcpy(state().residence + b, &on_host, 4, cudaMemcpyHostToDevice));
    }
  }
  plan_uploaded_ = false;  // export_digits uploads it on its stream, without a wait
  widened_.clear();        // settled above
  return plan_.words;
}

void CudaAccumulator::upload_plan(void* cuda_stream) {
  if (plan_uploaded_) return;
  const cudaStream_t stream = as_stream(cuda_stream);
  RV_CUDA_CHECK(cudaMemcpyAsync(plan_kind_.data(), kind_host_.data(), blocks_,
                                cudaMemcpyHostToDevice, stream));
  RV_CUDA_CHECK(cudaMemcpyAsync(plan_bottom_.data(), plan_.bottom.data(), blocks_ * 4,
                                cudaMemcpyHostToDevice, stream));
  // The plan's offsets are size_t, the device's uint64_t: the same 8 bytes on this ABI.
  static_assert(sizeof(std::size_t) == sizeof(std::uint64_t));
  RV_CUDA_CHECK(cudaMemcpyAsync(plan_offset_.data(), plan_.offset.data(), blocks_ * 8,
                                cudaMemcpyHostToDevice, stream));
  plan_uploaded_ = true;
}

void CudaAccumulator::export_digits(std::int64_t* d_words, void* cuda_stream) {
  if (!planned_) throw InputError("CudaAccumulator: export before plan");
  const cuda_detail::ScopedDevice scope(device_);
  const cudaStream_t stream = as_stream(cuda_stream);
  // Copies from pageable host memory to the device return once the source is staged (CUDA's
  // API synchronisation rules), so these vectors may be reused or freed without a wait.
  upload_plan(stream);
  std::vector<std::int64_t> staging(1, static_cast<std::int64_t>(host_.micro_batches()));
  RV_CUDA_CHECK(cudaMemcpyAsync(d_words, staging.data(), 8, cudaMemcpyHostToDevice, stream));
  for (std::size_t b = 0; b < blocks_; ++b) {
    if (residence_host_[b] == kOnDevice) continue;
    const std::size_t words =
        static_cast<std::size_t>(plan_.limbs[b] + plan_.special[b]) * block_elements(count_, b);
    if (words == 0) continue;
    staging.assign(words, 0);
    host_.export_block(plan_, b, staging.data());
    RV_CUDA_CHECK(cudaMemcpyAsync(d_words + plan_.offset[b], staging.data(), words * 8,
                                  cudaMemcpyHostToDevice, stream));
  }
  launch_accumulator_export(state(), device_plan(), d_words, cuda_stream);
}

void CudaAccumulator::finish(const std::int64_t* d_summed, Op op, std::uint64_t mean_over,
                             DType dtype, void* d_out, void* cuda_stream) {
  if (!planned_) throw InputError("CudaAccumulator: finish before plan");
  check_mean_over(op, mean_over);
  const bool mean = op == Op::kMean;
  const cuda_detail::ScopedDevice scope(device_);
  const cudaStream_t stream = as_stream(cuda_stream);
  upload_plan(stream);  // a no-op after export_digits
  launch_accumulator_finish(device_plan(), d_summed, count_, mean,
                            static_cast<std::uint32_t>(mean ? mean_over : 1), dtype, d_out,
                            cuda_stream);
  std::vector<std::int64_t> summed;
  for (std::size_t b = 0; b < blocks_; ++b) {
    if (kind_host_[b] != kSkip) continue;
    const std::size_t n = block_elements(count_, b);
    summed.resize(static_cast<std::size_t>(plan_.limbs[b] + plan_.special[b]) * n);
    RV_CUDA_CHECK(cudaMemcpyAsync(summed.data(), d_summed + plan_.offset[b], summed.size() * 8,
                                  cudaMemcpyDeviceToHost, stream));
    RV_CUDA_CHECK(cudaStreamSynchronize(stream));
    finish_host_block(b, summed.data(), op, mean_over, dtype, d_out, stream);
  }
}

void CudaAccumulator::finish_alone(Op op, std::uint64_t mean_over, DType dtype, void* d_out,
                                   void* cuda_stream) {
  check_mean_over(op, mean_over);
  const bool mean = op == Op::kMean;
  const cuda_detail::ScopedDevice scope(device_);
  const cudaStream_t stream = as_stream(cuda_stream);
  // Adds pending on another stream are waited for first: the kernel must see what they did.
  for (const PendingAdd& p : pending_) {
    if (p.stream != cuda_stream) {
      settle();
      break;
    }
  }
  // Enqueued before the last micro-batch is resolved: the device rounds while the host waits
  // for the adds' read-back, and the blocks they marked for the host are skipped.
  launch_accumulator_finish_alone(state(), mean, static_cast<std::uint32_t>(mean ? mean_over : 1),
                                  dtype, d_out, cuda_stream);
  resolve();
  settle();
  widened_.clear();  // the adds are settled: their widened copies go
  if (host_blocks() == 0) return;
  // The blocks on the host, under the plan of its own words (a world of one agrees with
  // itself), each written behind the kernel on the same stream.
  std::vector<std::int64_t> words(host_.agreement_size());
  host_.agreement_words(0, op, mean_over, words.data());
  planned_ = false;  // plan_ holds the host's plan now, not the device's
  plan_uploaded_ = false;
  host_.plan_into(words.data(), 1, plan_);
  std::vector<std::int64_t> block_words;
  for (std::size_t b = 0; b < blocks_; ++b) {
    if (residence_host_[b] == kOnDevice) continue;
    const std::size_t n = block_elements(count_, b);
    block_words.assign(static_cast<std::size_t>(plan_.limbs[b] + plan_.special[b]) * n, 0);
    host_.export_block(plan_, b, block_words.data());
    finish_host_block(b, block_words.data(), op, mean_over, dtype, d_out, stream);
  }
}

void CudaAccumulator::finish_host_block(std::size_t b, const std::int64_t* words, Op op,
                                        std::uint64_t mean_over, DType dtype, void* d_out,
                                        void* cuda_stream) {
  const cudaStream_t stream = as_stream(cuda_stream);
  const std::size_t n = block_elements(count_, b);
  const std::size_t size = dtype_bytes(dtype);
  std::vector<float> out(kBlock);
  finish_accumulated_block(plan_, b, words, op, mean_over, count_, out.data(), dtype);
  std::vector<unsigned char> bytes(n * size);
  narrow_into(out.data(), n, dtype, bytes.data());  // exact: values of the dtype (f32: a copy)
  RV_CUDA_CHECK(cudaMemcpyAsync(static_cast<unsigned char*>(d_out) + b * kBlock * size,
                                bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream));
  RV_CUDA_CHECK(cudaStreamSynchronize(stream));  // `bytes` goes when this returns
}

const AccumulatorPlan& CudaAccumulator::planned() const {
  if (!planned_) throw InputError("no plan yet: call rv_accumulator_plan with the agreed words");
  return plan_;
}

std::size_t CudaAccumulator::host_blocks() const {
  return static_cast<std::size_t>(
      std::count(residence_host_.begin(), residence_host_.end(), kOnHost));
}

void CudaAccumulator::footprint(std::size_t* total_bytes, std::size_t* wide,
                                std::size_t* flagged) const {
  *total_bytes = bytes();
  *wide = host_.wide_blocks();
  *flagged = host_.flagged_blocks();
}

std::size_t CudaAccumulator::bytes() const {
  return digits_.bytes() + bottom_.bytes() + magnitude_bits_.bytes() + covered_.bytes() +
         residence_.bytes() + plan_kind_.bytes() + plan_bottom_.bytes() + plan_offset_.bytes() +
         host_.bytes();
}

}  // namespace rv
