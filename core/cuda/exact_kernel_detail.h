// What the exact kernels (exact_{agreement,encode,round,combine}_kernel.cu) share: the mapping
// of an exact block to threads, the paired loads and stores, and the launch helpers. Device
// code: included only by the exact kernels' .cu files. Private to core/cuda.
//
// Mapping. The agreement kernel gives each exact block (1024 elements) to one warp: every lane
// loads 8 float4s (the whole block is in flight at once), widens its own words, and five
// shuffles max-combine them (merge_agreement) into the block's three words. The encode and
// round kernels give each exact block to one CUDA block of 256 threads, grid-striding over
// the blocks (a grid of the resident size): thread t owns the element pairs 2t and 512 + 2t,
// so every warp-wide load and store is one contiguous span (floats as float2: 256 bytes per
// warp, digits as longlong2: 512 bytes per warp) in the common one-limb case, and limb j of
// a multi-limb block, limb-major as on the host, is one such span too. A pair falls back to
// scalar accesses only where the buffer does not allow the vector (an unaligned pointer, an
// odd-sized last block's upper limbs, the end of the block).
//
// The encode and the round each come in two kernels: one for one-limb blocks without
// specials (the common case: one digit, exact::round_one_limb) and one for the rest (every
// limb and the special words; add_shifted over the limbs and round_exact_sum), launched only
// when the plan has such blocks, so the general path costs the common one no registers and
// the common encode can be instantiated per limb width (a compile-time divisor) cheaply.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/exact_kernel.h"
#include "core/cuda/launch_grid.h"
#include "core/exact/exact_law.h"
#include "core/fold_law.h"

namespace rv::exact_kernel_detail {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
// Element pairs per thread in the encode and round kernels: 2 × 256 × 2 = one exact block.
constexpr int kPairs = static_cast<int>(exact::kBlock) / (2 * kThreads);
static_assert(kPairs * 2 * kThreads == static_cast<int>(exact::kBlock),
              "the encode and round kernels cover one exact block per CUDA block");
static_assert(exact::kBlock == 32 * 8 * 4, "the agreement kernel gives a warp 8 float4s a lane");

__device__ __forceinline__ bool aligned_to(const void* p, std::uintptr_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// Loads elements p[0], p[1] as bits (those at or past `left` read as 0: they are never used).
__device__ __forceinline__ void load_pair(const float* p, std::size_t left, std::uint32_t bits[2]) {
  if (left >= 2 && aligned_to(p, 8)) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    bits[0] = float_bits(v.x);
    bits[1] = float_bits(v.y);
  } else {
    bits[0] = float_bits(p[0]);
    bits[1] = left >= 2 ? float_bits(p[1]) : 0u;
  }
}

__device__ __forceinline__ void load_pair(const std::int64_t* p, std::size_t left,
                                          std::int64_t words[2]) {
  if (left >= 2 && aligned_to(p, 16)) {
    const longlong2 v = *reinterpret_cast<const longlong2*>(p);
    words[0] = v.x;
    words[1] = v.y;
  } else {
    words[0] = p[0];
    words[1] = left >= 2 ? p[1] : 0;
  }
}

__device__ __forceinline__ void store_pair(std::int64_t* p, std::size_t left, std::int64_t a,
                                           std::int64_t b) {
  if (left >= 2 && aligned_to(p, 16)) {
    *reinterpret_cast<longlong2*>(p) = make_longlong2(a, b);
  } else {
    p[0] = a;
    if (left >= 2) p[1] = b;
  }
}

__device__ __forceinline__ void store_pair(float* p, std::size_t left, std::uint32_t a,
                                           std::uint32_t b) {
  if (left >= 2 && aligned_to(p, 8)) {
    *reinterpret_cast<float2*>(p) = make_float2(float_from_bits(a), float_from_bits(b));
  } else {
    p[0] = float_from_bits(a);
    if (left >= 2) p[1] = float_from_bits(b);
  }
}

// A block the one-limb kernels take: at most one limb and no special words.
__host__ __device__ __forceinline__ bool one_limb_slot(const ExactBlockSlot& slot) {
  return slot.limbs <= 1 && slot.special == 0;
}

// ---- Launches ----------------------------------------------------------------------------

inline std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

inline cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

template <typename Kernel>
unsigned grid_for(Kernel kernel, std::size_t needed_blocks) {
  return cuda_detail::resident_grid(reinterpret_cast<const void*>(kernel), kThreads, needed_blocks);
}

// Throws InputError naming `who` for a plan view the kernels cannot take (exact_kernel.cu).
void check_plan(const ExactPlanView& plan, const char* who);

// Throws InputError naming `who` and `what` for a null device pointer (exact_kernel.cu).
void check_pointer(const void* p, const char* who, const char* what);

}  // namespace rv::exact_kernel_detail
