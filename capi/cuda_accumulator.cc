// The C ABI's exact gradient accumulator on a GPU (rv_accumulator_create with device ≥ 0):
// core/cuda/cuda_accumulator.h behind the handle's interface.
//
// bf16 and f16 (correct, not the fastest): an add widens the values on the device
// (core/cuda/dtype_kernel.h, exact) into a binary32 copy that the binary32 accumulator adds;
// the copy is kept until the add is settled, since a settle may read the values again. The
// finish rounds each exact sum once, directly to the dtype, which only the host's rounding
// does yet: the summed words are copied to the host, rounded there under the same plan, and
// the results copied back.
#include <vector>

#include "capi/accumulator_handle.h"
#include "capi/last_error.h"
#include "core/cuda/cuda_accumulator.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/dtype_kernel.h"
#include "core/dtype_arrays.h"

namespace rv::capi {
namespace {

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

class DeviceAccumulator final : public rv_accumulator {
 public:
  DeviceAccumulator(int device, std::size_t count) : accumulator_(device, count) {}
  std::size_t count() const override { return accumulator_.count(); }
  void add(const void* values, std::size_t offset, std::size_t n, DType dtype,
           void* stream) override {
    if (dtype == DType::kF32) {
      accumulator_.add(static_cast<const float*>(values), offset, n, stream);
      return;
    }
    const cuda_detail::ScopedDevice scope(accumulator_.device());
    DeviceBuffer widened(accumulator_.device(), n * sizeof(float));
    launch_widen(values, n, dtype, widened.floats(), stream);
    accumulator_.add(widened.floats(), offset, n, stream);
    widened_.push_back(std::move(widened));
  }
  void end_micro_batch() override {
    accumulator_.end_micro_batch();  // settles every add
    widened_.clear();
  }
  void end_micro_batch_deferred() override {
    if (!widened_.empty()) {  // the widened copies live until a settle: settle now
      end_micro_batch();
      return;
    }
    accumulator_.end_micro_batch_deferred();
  }
  void resolve() override { accumulator_.resolve(); }
  void clear(void* stream) override {
    accumulator_.clear(stream);  // waits for the pending adds' streams
    widened_.clear();
  }
  std::size_t agreement_size() const override { return accumulator_.agreement_size(); }
  void agreement_words(std::int64_t layout, Op op, std::uint64_t mean_over, std::int64_t* words,
                       void* stream) override {
    accumulator_.agreement_words(layout, op, mean_over, words, stream);  // settles
    widened_.clear();
  }
  std::size_t plan(const std::int64_t* agreed, std::uint32_t world) override {
    const std::size_t words = accumulator_.plan(agreed, world);
    widened_.clear();
    return words;
  }
  void export_digits(std::int64_t* words, void* stream) override {
    accumulator_.export_digits(words, stream);
  }
  void finish(const std::int64_t* summed, Op op, std::uint64_t mean_over, DType dtype, void* out,
              void* stream) override {
    if (dtype == DType::kF32) {
      accumulator_.finish(summed, op, mean_over, static_cast<float*>(out), stream);
      return;
    }
    // The layout of the summed words: the device accumulator's plan (its host accumulator's
    // plan of the agreed words).
    const AccumulatorPlan& plan = accumulator_.planned();
    const cuda_detail::ScopedDevice scope(accumulator_.device());
    const cudaStream_t s = as_stream(stream);
    std::vector<std::int64_t> words(plan.words);
    RV_CUDA_CHECK(cudaMemcpyAsync(words.data(), summed, words.size() * sizeof(std::int64_t),
                                  cudaMemcpyDeviceToHost, s));
    RV_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<float> results(count());
    finish_accumulated(plan, words.data(), op, mean_over, results.size(), results.data(), dtype);
    std::vector<unsigned char> bytes(results.size() * dtype_bytes(dtype));
    narrow_into(results.data(), results.size(), dtype, bytes.data());  // exact: values of it
    RV_CUDA_CHECK(cudaMemcpyAsync(out, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, s));
    RV_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  void finish_alone(Op op, std::uint64_t mean_over, DType dtype, void* out, void* stream) override {
    if (dtype == DType::kF32) {
      accumulator_.finish_alone(op, mean_over, static_cast<float*>(out), stream);
      widened_.clear();  // settled
      return;
    }
    // bf16 and f16 are rounded on the host from the words (finish): the rounds of a world of
    // one, then the words' path.
    std::vector<std::int64_t> words(agreement_size());
    agreement_words(0, op, mean_over, words.data(), stream);
    const std::size_t digit_words = plan(words.data(), 1);
    const cuda_detail::ScopedDevice scope(accumulator_.device());
    DeviceBuffer d_words(accumulator_.device(), digit_words * sizeof(std::int64_t));
    export_digits(static_cast<std::int64_t*>(d_words.data()), stream);
    finish(static_cast<const std::int64_t*>(d_words.data()), op, mean_over, dtype, out, stream);
  }
  void footprint(std::size_t* bytes, std::size_t* wide, std::size_t* flagged) const override {
    *bytes = accumulator_.bytes();
    *wide = accumulator_.host().wide_blocks();
    *flagged = accumulator_.host().flagged_blocks();
  }

 private:
  // Declared before the accumulator, so destroyed after it: no pending add outlives its copy.
  std::vector<DeviceBuffer> widened_;
  CudaAccumulator accumulator_;
};

}  // namespace

std::unique_ptr<rv_accumulator> make_cuda_accumulator(std::size_t count, int device) {
  return std::make_unique<DeviceAccumulator>(device, count);
}

}  // namespace rv::capi
