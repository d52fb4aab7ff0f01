#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "core/error.h"
#include "core/exact/exact_reduction.h"
#include "core/exact/host_exact.h"
#include "core/exact/stacked_in_double.h"
#include "core/reducer/exact_device.h"

namespace rv {
namespace {

class HostExactDevice final : public ExactDevice {
 public:
  const char* name() const override { return "cpu"; }
  DeviceKind kind() const override { return DeviceKind::kHost; }
  std::int64_t* allocate_words(std::size_t n) override {
    const std::size_t bytes = ((n ? n : 1) * sizeof(std::int64_t) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<std::int64_t*>(p);
  }
  void free_words(std::int64_t* p) override { std::free(p); }
  void agreement_words(const float* values, std::size_t n, std::int64_t* words) override {
    exact_agreement_words(values, n, words);
  }
  void download_words(std::int64_t* host, const std::int64_t* words, std::size_t n) override {
    if (n != 0 && host != words) std::memmove(host, words, n * sizeof *words);
  }
  void encode(const float* values, const ExactPlan& plan, std::int64_t* words) override {
    exact_encode(values, plan, words);
  }
  void round(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out,
             DType dtype) override {
    exact_round(sums, plan, op, out, dtype);
  }
  void synchronize() override {}
  float* allocate_values(std::size_t n) override {
    const std::size_t bytes = ((n ? n : 1) * sizeof(float) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<float*>(p);
  }
  void free_values(float* p) override { std::free(p); }
  void reduce_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride,
                      std::size_t n, Op op, float* out, DType dtype) override {
    // binary32 takes the fast path (exact sums in double where provably exact, the C ABI's
    // host path), which is held bit for bit to exact_reduce_stacked; it has no half rounding,
    // so bf16 and f16 take exact_reduce_stacked itself.
    if (dtype == DType::kF32) {
      exact_reduce_stacked_in_double(stacked, world, slot_stride, n, op, out);
    } else {
      exact_reduce_stacked(stacked, world, slot_stride, n, op, out, dtype);
    }
  }
};

}  // namespace

namespace {
[[noreturn]] void refuse_reduce_scatter(const ExactDevice& device) {
  throw InternalError(std::string(device.name()) +
                      ": this exact device has no reduce-scatter (its owner reduction of stacked "
                      "addends is not built for it)");
}
}  // namespace

float* ExactDevice::allocate_values(std::size_t) { refuse_reduce_scatter(*this); }
// Nothing can have been allocated by the refusing allocate_values.
void ExactDevice::free_values(float*) {}
void ExactDevice::reduce_stacked(const float*, std::uint32_t, std::size_t, std::size_t, Op, float*,
                                 DType) {
  refuse_reduce_scatter(*this);
}

ExactDevice& host_exact_device() {
  static HostExactDevice device;
  return device;
}

}  // namespace rv
