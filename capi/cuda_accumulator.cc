// The C ABI's exact gradient accumulator on a GPU (rv_accumulator_create with device ≥ 0):
// core/cuda/cuda_accumulator.h behind the handle's interface.
#include "capi/accumulator_handle.h"
#include "capi/last_error.h"
#include "core/cuda/cuda_accumulator.h"

namespace rv::capi {
namespace {

class DeviceAccumulator final : public rv_accumulator {
 public:
  DeviceAccumulator(int device, std::size_t count) : accumulator_(device, count) {}
  std::size_t count() const override { return accumulator_.count(); }
  void add(const float* values, std::size_t offset, std::size_t n, void* stream) override {
    accumulator_.add(values, offset, n, stream);
  }
  void end_micro_batch() override { accumulator_.end_micro_batch(); }
  void clear(void* stream) override { accumulator_.clear(stream); }
  std::size_t agreement_size() const override { return accumulator_.agreement_size(); }
  void agreement_words(std::int64_t layout, Op op, std::uint64_t mean_over, std::int64_t* words,
                       void* stream) override {
    accumulator_.agreement_words(layout, op, mean_over, words, stream);
  }
  std::size_t plan(const std::int64_t* agreed, std::uint32_t world) override {
    return accumulator_.plan(agreed, world);
  }
  void export_digits(std::int64_t* words, void* stream) override {
    accumulator_.export_digits(words, stream);
  }
  void finish(const std::int64_t* summed, Op op, std::uint64_t mean_over, float* out,
              void* stream) override {
    accumulator_.finish(summed, op, mean_over, out, stream);
  }
  void footprint(std::size_t* bytes, std::size_t* wide, std::size_t* flagged) const override {
    *bytes = accumulator_.bytes();
    *wide = accumulator_.host().wide_blocks();
    *flagged = accumulator_.host().flagged_blocks();
  }

 private:
  CudaAccumulator accumulator_;
};

}  // namespace

std::unique_ptr<rv_accumulator> make_cuda_accumulator(std::size_t count, int device) {
  return std::make_unique<DeviceAccumulator>(device, count);
}

}  // namespace rv::capi
