// The C ABI's exact gradient accumulator on a GPU (rv_accumulator_create with device ≥ 0):
// core/cuda/accumulator/cuda_accumulator.h behind core/accumulator's interface.
//
// bf16 and f16: an add widens the values on the device (core/cuda/dtype_kernel.h, exact) into
// a binary32 copy that the binary32 accumulator adds; the copy is kept until the add is
// settled, since a settle may read the values again. The finish rounds each exact sum once,
// straight to the dtype, on the device (core/cuda/accumulator/accumulator_kernel.h), as for f32: no
// host round trip unless a block lives on the host.
#include <utility>
#include <vector>

#include "capi/accumulator_handle.h"
#include "capi/last_error.h"
#include "core/cuda/accumulator/cuda_accumulator.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/dtype_kernel.h"

namespace rv::capi {
namespace {

class DeviceAccumulator final : public GradientAccumulator {
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
    accumulator_.finish(summed, op, mean_over, dtype, out, stream);
  }
  void finish_alone(Op op, std::uint64_t mean_over, DType dtype, void* out, void* stream) override {
    accumulator_.finish_alone(op, mean_over, dtype, out, stream);
    widened_.clear();  // settled
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

std::unique_ptr<GradientAccumulator> make_cuda_accumulator(std::size_t count, int device) {
  return std::make_unique<DeviceAccumulator>(device, count);
}

}  // namespace rv::capi
