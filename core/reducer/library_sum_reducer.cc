#include "core/reducer/library_sum_reducer.h"

namespace rv {
namespace {

// The device's scratch of n 2-byte elements, freed on every path out.
class HalfScratch {
 public:
  HalfScratch(FoldDevice& device, std::size_t n)
      : device_(device), floats_(device.allocate((n + 1) / 2)) {}
  ~HalfScratch() { device_.free(floats_); }
  HalfScratch(const HalfScratch&) = delete;
  HalfScratch& operator=(const HalfScratch&) = delete;
  void* bytes() const { return floats_; }

 private:
  FoldDevice& device_;
  float* floats_;
};

}  // namespace

void library_sum_all_reduce(Transport& transport, FoldDevice& device, float* arena, std::size_t n,
                            Op op, DType dtype) {
  device.synchronize();
  if (dtype == DType::kF32) {
    transport.library_sum(arena, n);
  } else {
    // The library sums the format's own 2-byte values (its half-precision arithmetic, not
    // ours); the result comes back widened, exactly.
    const HalfScratch half(device, n);
    device.narrow(arena, n, dtype, half.bytes());
    device.synchronize();
    transport.library_sum_half(half.bytes(), n, dtype);
    device.widen(half.bytes(), n, dtype, arena);
  }
  // Never pre-scaled: the mean is the library's sum times 1/W, as in the fixed-order fold,
  // then rounded to the dtype once (the identity for a sum, already of the dtype).
  device.finish_library_sum(arena, n, transport.world_size(), op);
  if (dtype != DType::kF32) device.round_to_dtype(arena, n, dtype);
  device.synchronize();
}

}  // namespace rv
