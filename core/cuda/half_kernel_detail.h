// What the half-precision stacked kernels (fold_half_kernel.cu, exact_stacked_half_kernel.cu)
// share: the table as the kernels read it, the path choice, the unit loads at any phase, the
// element widening and narrowing, and the argument checks. Device code: included only by those
// .cu files. Private to core/cuda.
//
// Units. A thread works on units of 8 elements (16 bytes) of the output at the output's own
// phase, so every store is one aligned 16-byte store and a warp's stores are one contiguous
// 512-byte span. A slot at the output's phase is read in the same aligned units; a slot at
// another phase p (in elements, 1 … 7) has the unit's 8 elements straddling two aligned
// 16-byte chunks, and the thread loads both and shifts the 8 wanted halves into place
// (funnel shifts of 32-bit words). Every lane loading both chunks requests each chunk twice,
// the second request usually an L1 or L2 hit: the f32 fold measured that faster than warp
// shuffles (core/cuda/fold_kernel.cu, default_fold_realign). A slot's phase is
// (phase0 + r × stride_phase) mod 8, the same for every lane of a warp, so the shift's
// branches never diverge.
#pragma once

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/half_stacked_kernel.h"
#include "core/cuda/launch_grid.h"
#include "core/dtype_law.h"
#include "core/error.h"
#include "core/fold_law.h"

namespace rv::half_kernel_detail {

constexpr int kThreads = 256;
constexpr std::size_t kUnit = 8;  // elements per 16-byte unit
// Fewest elements for each unit path: below these a unit or two would be all the body.
constexpr std::size_t kVectorMinimum = 16;
constexpr std::size_t kRealignedMinimum = 32;

struct HalfTable {
  const unsigned char* stacked;  // slot 0's element 0 (bytes: it may be odd)
  unsigned char* out;
  std::size_t stride;  // elements between slots
  std::size_t n;       // elements per slot
  std::size_t head;    // elements before the first unit (all n on the scalar path)
  std::size_t units;   // 8-element units after the head
  std::uint32_t world;
  std::uint32_t phase0;        // the phase (elements mod 8) of slot 0's element `head`
  std::uint32_t stride_phase;  // stride mod 8
  bool bytewise;               // a pointer is odd: elements are read and written bytewise
};

inline std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
inline std::uint32_t half_phase(const void* p) {
  return static_cast<std::uint32_t>(address(p) / 2 % kUnit);
}

inline detail::HalfPath path_of(const void* stacked, std::uint32_t world, std::size_t stride,
                                std::size_t n, const void* out) {
  if (address(stacked) % 2 != 0 || address(out) % 2 != 0) return detail::HalfPath::kScalar;
  // A unit of element i is aligned in every slot and in the output only if they all sit at one
  // offset modulo 16 bytes: slot 0's phase is the output's and the stride a whole number of
  // units (or one slot only).
  const bool same_phase = half_phase(stacked) == half_phase(out);
  if (same_phase && (world == 1 || stride % kUnit == 0)) {
    return n >= kVectorMinimum ? detail::HalfPath::kVector : detail::HalfPath::kScalar;
  }
  return n >= kRealignedMinimum ? detail::HalfPath::kRealigned : detail::HalfPath::kScalar;
}

inline HalfTable table_of(const void* stacked, std::uint32_t world, std::size_t stride,
                          std::size_t n, void* out) {
  HalfTable t{static_cast<const unsigned char*>(stacked),
              static_cast<unsigned char*>(out),
              stride,
              n,
              n,
              0,
              world,
              0,
              static_cast<std::uint32_t>(stride % kUnit),
              address(stacked) % 2 != 0 || address(out) % 2 != 0};
  const std::size_t out_head =
      (kUnit - half_phase(out)) % kUnit;  // output element `head` is aligned
  switch (path_of(stacked, world, stride, n, out)) {
    case detail::HalfPath::kVector:
      t.head = out_head;
      t.units = (n - t.head) / kUnit;
      break;
    case detail::HalfPath::kRealigned:
      // A unit of a slot at phase p > 0 is read as the aligned chunks around it, which reach p
      // elements before it and 8 − p after it: a head of at least 7 and a tail of at least 7
      // keep both inside the slot, so no load touches the gaps between slots or memory past
      // either end of the table (the head stays at the output's phase: 7, or 8 + 0 … 6).
      t.head = out_head >= 7 ? out_head : out_head + kUnit;
      t.units = (n - t.head - 7) / kUnit;
      break;
    case detail::HalfPath::kScalar:
      break;
  }
  t.phase0 = static_cast<std::uint32_t>((half_phase(stacked) + t.head) % kUnit);
  return t;
}

// Throws InputError naming `who` for arguments no kernel takes: world outside 1 … 2^20, a
// slot stride shorter than a slot, a null pointer, an output overlapping a slot other than
// exactly slot 0.
void check_half_table(const char* who, const void* stacked, std::uint32_t world, std::size_t stride,
                      std::size_t n, const void* out);

// Blocks for a grid-stride launch of `kernel` over the table: enough threads for every unit,
// or for every element on the scalar path, never more than stay resident.
template <typename Kernel>
unsigned grid_for(Kernel kernel, const HalfTable& t) {
  const std::size_t work = t.units != 0 ? t.units : t.n;
  return cuda_detail::resident_grid(reinterpret_cast<const void*>(kernel), kThreads,
                                    (work + kThreads - 1) / kThreads);
}

#if defined(__CUDACC__)

// Eight elements of one unit: element 2k in the low half of word k (little-endian).
struct Unit {
  std::uint32_t w[4];
};

// Slot r's unit u (elements head + 8u … + 7), at whatever phase the slot has.
__device__ __forceinline__ Unit load_unit(const HalfTable& t, std::uint32_t r, std::size_t u) {
  const std::size_t first = static_cast<std::size_t>(r) * t.stride + t.head + kUnit * u;
  const std::uint32_t phase = (t.phase0 + r * t.stride_phase) % kUnit;
  const uint4* chunk = reinterpret_cast<const uint4*>(t.stacked + 2 * (first - phase));
  const uint4 a = chunk[0];
  if (phase == 0) return Unit{{a.x, a.y, a.z, a.w}};
  const uint4 b = chunk[1];
  const std::uint32_t c[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  // The wanted elements are p … p + 7 of the 16 loaded: words q … q + 4, q = p / 2, shifted
  // down by one half when p is odd. Selects on q (not an indexed array, which would go to
  // local memory).
  const std::uint32_t q = phase / 2;
  std::uint32_t d[5];
#pragma unroll
  for (int k = 0; k < 5; ++k) {
    d[k] = q == 0 ? c[k] : q == 1 ? c[k + 1] : q == 2 ? c[k + 2] : c[k + 3];
  }
  Unit out;
#pragma unroll
  for (int j = 0; j < 4; ++j) out.w[j] = (phase & 1u) ? __funnelshift_r(d[j], d[j + 1], 16) : d[j];
  return out;
}

__device__ __forceinline__ void store_unit(const HalfTable& t, std::size_t u, const Unit& v) {
  *reinterpret_cast<uint4*>(t.out + 2 * (t.head + kUnit * u)) =
      make_uint4(v.w[0], v.w[1], v.w[2], v.w[3]);
}

__device__ __forceinline__ std::uint16_t half_of(const Unit& v, int k) {
  return static_cast<std::uint16_t>(v.w[k / 2] >> (16 * (k % 2)));
}

__device__ __forceinline__ void pack(Unit& v, int k, std::uint16_t h) {
  if (k % 2 == 0) {
    v.w[k / 2] = h;
  } else {
    v.w[k / 2] |= static_cast<std::uint32_t>(h) << 16;
  }
}

// Element i of slot r, one at a time (the edges and the scalar path).
__device__ __forceinline__ std::uint16_t load_element(const HalfTable& t, std::uint32_t r,
                                                      std::size_t i) {
  const unsigned char* p = t.stacked + 2 * (static_cast<std::size_t>(r) * t.stride + i);
  if (t.bytewise) return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
  return *reinterpret_cast<const std::uint16_t*>(p);
}

__device__ __forceinline__ void store_element(const HalfTable& t, std::size_t i, std::uint16_t h) {
  unsigned char* p = t.out + 2 * i;
  if (t.bytewise) {
    p[0] = static_cast<unsigned char>(h);
    p[1] = static_cast<unsigned char>(h >> 8);
  } else {
    *reinterpret_cast<std::uint16_t*>(p) = h;
  }
}

// The exact binary32 widening. bf16 is binary32's top half (core/dtype_law.h's widen_bf16);
// f16 takes the hardware conversion (cvt.f32.f16), exact for every value (a binary16
// subnormal becomes a binary32 normal), one instruction instead of the law's normalising
// loop. A NaN stays a NaN, its payload possibly another: no contract's result carries a
// payload (every NaN is written canonical), and the tests hold both kernels to the law's
// widening on NaNs of every payload.
template <bool kF16>
__device__ __forceinline__ float widen(std::uint16_t h) {
  if constexpr (kF16) {
    return __half2float(__ushort_as_half(h));
  } else {
    return widen_bf16(h);
  }
}

// The one rounding of a binary32 value to the dtype: core/dtype_law.h's narrow_bf16; for f16
// the hardware's round-to-nearest-even conversion (cvt.rn.f16.f32: subnormals kept, overflow
// to ±Inf, IEEE's rounding, as narrow_f16), a NaN written as the canonical 0x7E00.
template <bool kF16>
__device__ __forceinline__ std::uint16_t narrow(float v) {
  if constexpr (kF16) {
    if (isnan(v)) return kCanonicalF16NanBits;
    return __half_as_ushort(__float2half_rn(v));
  } else {
    return narrow_bf16(v);
  }
}

#endif  // __CUDACC__

}  // namespace rv::half_kernel_detail
