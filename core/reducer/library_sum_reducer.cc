#include "core/reducer/library_sum_reducer.h"

#include <vector>

#include "core/error.h"
#include "core/reducer/reduce_scatter_agreement.h"

namespace rv {
namespace {

// The device's scratch of n floats (or 2n 2-byte elements), freed on every path out.
class DeviceScratch {
 public:
  DeviceScratch(FixedOrderDevice& device, std::size_t floats)
      : device_(device), floats_(device.allocate(floats)) {}
  ~DeviceScratch() { device_.free(floats_); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  float* floats() const { return floats_; }
  void* bytes() const { return floats_; }

 private:
  FixedOrderDevice& device_;
  float* floats_;
};

// Floats that hold n 2-byte elements.
std::size_t floats_for_halves(std::size_t n) { return (n + 1) / 2; }

}  // namespace

void library_sum_all_reduce(Transport& transport, FixedOrderDevice& device, float* arena,
                            std::size_t n, Op op, DType dtype) {
  device.synchronize();
  if (dtype == DType::kF32) {
    transport.library_sum(arena, n);
  } else {
    // The library sums the format's own 2-byte values (its half-precision arithmetic, not
    // ours); the result comes back widened, exactly.
    const DeviceScratch half(device, floats_for_halves(n));
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

void library_sum_reduce_scatter(Transport& transport, FixedOrderDevice& device, const float* arena,
                                std::size_t n, float* out, std::size_t out_count, Op op,
                                DType dtype) {
  // Every rank asks the same question of the same binary: all refuse alike, before any byte.
  if (auto reason = transport.library_reduce_scatter_unavailable(dtype)) throw InputError(*reason);
  const std::uint32_t world = transport.world_size();
  const std::uint32_t rank = transport.rank();
  agree_on_reduce_scatter(transport, Contract::kLibrarySum, op, dtype, n, std::nullopt, out_count);
  const std::size_t s = padded_shard_size(n, world);
  const std::size_t padded = s * world;
  // The library reduces the padded arena: the arena, then zeros (fewer than W of them).
  const DeviceScratch buffer(device, padded);
  device.copy(buffer.floats(), arena, n * sizeof(float));
  if (padded > n) {
    const std::vector<float> zeros(padded - n, 0.0f);
    device.upload(buffer.floats() + n, zeros.data(), zeros.size() * sizeof(float));
  }
  device.synchronize();
  if (dtype == DType::kF32) {
    transport.library_reduce_scatter(buffer.floats(), s, dtype);
    device.copy(out, buffer.floats() + rank * s, out_count * sizeof(float));
  } else {
    const DeviceScratch half(device, floats_for_halves(padded));
    device.narrow(buffer.floats(), padded, dtype, half.bytes());
    device.synchronize();
    transport.library_reduce_scatter(half.bytes(), s, dtype);
    device.widen(static_cast<const char*>(half.bytes()) + rank * s * 2, out_count, dtype, out);
  }
  device.finish_library_sum(out, out_count, world, op);
  if (dtype != DType::kF32) device.round_to_dtype(out, out_count, dtype);
  device.synchronize();
}

}  // namespace rv
