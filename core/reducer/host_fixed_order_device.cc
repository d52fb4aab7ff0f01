#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "core/dtype_arrays.h"
#include "core/error.h"
#include "core/fold.h"
#include "core/reducer/fixed_order_device.h"

namespace rv {
namespace {

class HostFixedOrderDevice final : public FixedOrderDevice {
 public:
  const char* name() const override { return "cpu"; }
  DeviceKind kind() const override { return DeviceKind::kHost; }
  float* allocate(std::size_t n) override {
    // 64-byte alignment for vector loads; at least one element so the pointer is real.
    const std::size_t bytes = ((n ? n : 1) * sizeof(float) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<float*>(p);
  }
  void free(float* p) override { std::free(p); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memmove(dst, src, bytes);
  }
  void fold_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride,
                    std::size_t n, Op op, float* out) override {
    rv::fold_stacked(stacked, world, slot_stride, n, op, out);
  }
  void fold_slots(const float* const* slots, std::uint32_t world, std::size_t n, Op op,
                  float* out) override {
    rv::fold_ascending(slots, world, n, op, out);
  }
  void finish_library_sum(float* values, std::size_t n, std::uint32_t world, Op op) override {
    rv::finish_library_sum(values, n, world, op);
  }
  void round_to_dtype(float* values, std::size_t n, DType dtype) override {
    round_to_dtype_in_place(values, n, dtype);
  }
  void narrow(const float* values, std::size_t n, DType dtype, void* out) override {
    narrow_into(values, n, dtype, out);
  }
  void widen(const void* values, std::size_t n, DType dtype, float* out) override {
    widen_into(values, n, dtype, out);
  }
  void synchronize() override {}
};

}  // namespace

void FixedOrderDevice::fold_slots(const float* const*, std::uint32_t, std::size_t, Op, float*) {
  throw InternalError(std::string(name()) + ": this device folds stacked tables only");
}

FixedOrderDevice& host_fixed_order_device() {
  static HostFixedOrderDevice device;
  return device;
}

}  // namespace rv
