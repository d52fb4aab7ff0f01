// Where a reducer's arena, scratch and fold live: the host (CPU fold) or one GPU (the CUDA
// fold kernel). The fixed-order reducer is written once against this interface and a
// Transport, so the CPU (gloo) and GPU (nccl, cuda-loopback) paths run the same dataflow.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"
#include "core/dtype.h"
#include "core/reducer/device_kind.h"

namespace rv {

class FixedOrderDevice {
 public:
  virtual ~FixedOrderDevice() = default;
  // "cpu" or "cuda:<index> <device name>": for messages and reports only.
  virtual const char* name() const = 0;
  virtual DeviceKind kind() const = 0;
  // Scratch of n floats in this device's memory (never null, even for n = 0); freed by free.
  virtual float* allocate(std::size_t n) = 0;
  virtual void free(float* p) = 0;
  // Byte copy within this device's memory.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // The fixed-order fold of docs/DESIGN.md §2 over stacked slots (slot r = the copy from rank r
  // at stacked + r × slot_stride): exactly core/fold.h's fold_stacked, bit for bit.
  virtual void fold_stacked(const float* stacked, std::uint32_t world, std::size_t slot_stride,
                            std::size_t n, Op op, float* out) = 0;
  // The same fold over slots anywhere in this device's memory (slot r at slots[r]); out may
  // be one of them. For devices whose options say they fold in place
  // (FixedOrderOptions::own_slot_in_place); the others refuse with an InternalError.
  virtual void fold_slots(const float* const* slots, std::uint32_t world, std::size_t n, Op op,
                          float* out);
  // The library-sum finishing step (mean scale when op is mean, then the NaN rule), in place.
  virtual void finish_library_sum(float* values, std::size_t n, std::uint32_t world, Op op) = 0;
  // bf16/f16 (docs/DESIGN.md §2.5), all in this device's memory and in place where one
  // pointer is given. round_to_dtype: each value to the dtype's nearest, kept widened (the
  // fixed-order contract's last step). narrow: n widened values to the dtype's own 2-byte
  // elements at `out` (the library-sum contract hands those to the library). widen: back.
  virtual void round_to_dtype(float* values, std::size_t n, DType dtype) = 0;
  virtual void narrow(const float* values, std::size_t n, DType dtype, void* out) = 0;
  virtual void widen(const void* values, std::size_t n, DType dtype, float* out) = 0;
  // Waits until all work issued on this device is done.
  virtual void synchronize() = 0;
  // Host ↔ device copies for the tool's own bookkeeping (arenas in, results out). The host
  // device copies; a GPU device overrides both.
  virtual void upload(void* dst, const void* host_src, std::size_t bytes) {
    copy(dst, host_src, bytes);
  }
  virtual void download(void* host_dst, const void* src, std::size_t bytes) {
    copy(host_dst, src, bytes);
  }
};

// The host: std::vector-like scratch, core/fold.h's fold.
FixedOrderDevice& host_fixed_order_device();

}  // namespace rv
