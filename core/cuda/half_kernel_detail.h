// What the half-precision stacked kernels (fixed_order/fold_half_kernel.cu,
// exact/exact_stacked_half_kernel.cu) share: the table as the kernels read it, the path choice, the
// unit loads at any phase, the element widening and narrowing, and the argument checks. Device
// code: included only by those .cu files. Private to core/cuda.
//
// Units. A thread works on units of 8 elements (16 bytes) of the output at the output's own
// phase, so every store is one aligned 16-byte store and a warp's stores are one contiguous
// 512-byte span. A slot at the output's phase is read in the same aligned units; a slot at
// another phase p (in elements, 1 … 7) has the unit's 8 elements straddling two aligned
// 16-byte chunks, and the thread loads both and shifts the 8 wanted halves into place
// (funnel shifts of 32-bit words). Every lane loading both chunks requests each chunk twice,
// the second request usually an L1 or L2 hit, which the f32 fold found faster than warp
// shuffles (core/cuda/fixed_order/fold_kernel.cu, default_fold_realign). A slot's phase is
// (phase0 + r × stride_phase) mod 8, the same for every lane of a warp, so the shift's
// branches never diverge.
//
// Two ways to use them. load_unit (the first kernels) realigns a slot as soon as its chunks
// are requested: the shift waits for the data, so the next slot's loads are issued one memory
// latency later, which makes the realigned layouts the slowest. load_chunks + realign (the
// "units" kernels) split the two: a thread requests every chunk of a batch of slots first and
// shifts them afterwards, so all of them are in flight together, as
// fixed_order/fold_realign_kernel.cu does for f32. The few elements outside the units (the edges)
// are folded one per thread on the grid's last threads, their addends requested 8 at a time
// (edge_element).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "core/cuda/cuda_check.h"
#include "core/cuda/half_stacked_kernel.h"
#include "core/cuda/launch_grid.h"
#include "core/dtype_law.h"
#include "core/error.h"
#include "core/fold_law.h"
#include "core/host_device.h"

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
  std::size_t stride_bytes;    // 2 × stride
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
              address(stacked) % 2 != 0 || address(out) % 2 != 0,
              2 * stride};
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

// Whether the table has units and every slot's and the output's share one phase (the vector
// path): what the vector kernels take.
inline bool aligned_units(const HalfTable& t) {
  return t.units != 0 && t.phase0 == 0 && (t.world == 1 || t.stride_phase == 0);
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

// Blocks for a units kernel taking `units_per_thread` units a thread: enough threads for every
// unit, or for every element on the scalar path (where every element is an edge), never more
// than stay resident.
template <typename Kernel>
unsigned grid_for_units(Kernel kernel, const HalfTable& t, std::size_t units_per_thread) {
  const std::size_t work = t.units != 0 ? (t.units + units_per_thread - 1) / units_per_thread : t.n;
  return cuda_detail::resident_grid(reinterpret_cast<const void*>(kernel), kThreads,
                                    (work + kThreads - 1) / kThreads);
}

// The staged kernels keep their rounds in shared memory and read nothing through L1: the
// largest shared-memory carveout, so that as many of their blocks stay resident as
// resident_grid counts (a hint the driver may overrule). Once per kernel and device, before
// its grid is sized.
inline void prefer_shared_memory(const void* kernel) {
  static std::mutex mutex;
  static std::set<std::pair<const void*, int>> done;
  int device = 0;
  RV_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  if (done.emplace(kernel, device).second) {
    RV_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
  }
}

// The elements outside the units: the head, then the tail (every element on the scalar path).
RV_HD std::size_t edge_count(const HalfTable& t) { return t.n - kUnit * t.units; }

#if defined(__CUDACC__)

// Edge e (0 … edge_count − 1) as an element index.
__device__ __forceinline__ std::size_t edge_element(const HalfTable& t, std::size_t e) {
  return e < t.head ? e : e + kUnit * t.units;
}

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

// ---- The units kernels' loads -------------------------------------------------------

// A slot's aligned 16-byte chunks around one output unit: its own (holding the unit's first
// element) and the next one, requested only when the slot's phase is not 0.
struct Chunks {
  uint4 own;
  uint4 next;
};

// Slot r's phase relative to the output's units: the same for every unit and every lane.
__device__ __forceinline__ std::uint32_t slot_phase(const HalfTable& t, std::uint32_t r) {
  return (t.phase0 + r * t.stride_phase) % kUnit;
}

// Slot 0's element head + 8u, the first element of the output's unit u (in slot 0's bytes;
// not necessarily aligned): what slot_chunk offsets.
__device__ __forceinline__ const unsigned char* unit_base(const HalfTable& t, std::size_t u) {
  return t.stacked + 2 * (t.head + kUnit * u);
}

// Slot r's aligned chunk holding the first element of the unit at `base` (the `phase`
// elements before that element are the slot's own: head ≥ 7 on the realigned path, phase 0
// on the vector path).
__device__ __forceinline__ const uint4* slot_chunk(const HalfTable& t, const unsigned char* base,
                                                   std::uint32_t r, std::uint32_t phase) {
  return reinterpret_cast<const uint4*>(base + static_cast<std::size_t>(r) * t.stride_bytes -
                                        2 * phase);
}

// A unit's chunks of a slot: the requests only (nothing here waits for the data). `next` is
// left unset at phase 0, where realign never reads it.
__device__ __forceinline__ Chunks load_chunks(const uint4* chunk, std::uint32_t phase) {
  Chunks c;
  c.own = chunk[0];
  c.next = make_uint4(0u, 0u, 0u, 0u);
  if (phase != 0) c.next = chunk[1];
  return c;
}

// Slots r … r + kSlots − 1 (those below W) of the units first, first + threads, … (kUnits of
// them, those below t.units): every chunk requested, nothing waited for. Each slot's phase in
// `phase`, for realign.
template <int kSlots, int kUnits>
__device__ __forceinline__ void load_round(const HalfTable& t, std::uint32_t r, std::size_t first,
                                           std::size_t threads, std::uint32_t (&phase)[kSlots],
                                           Chunks (&held)[kSlots][kUnits]) {
  const unsigned char* base = unit_base(t, first);
  const std::size_t unit_step = 2 * kUnit * threads;  // bytes from one of the units to the next
  const unsigned char* slot[kSlots];
#pragma unroll
  for (int b = 0; b < kSlots; ++b) {
    phase[b] = slot_phase(t, r + b);
    slot[b] = reinterpret_cast<const unsigned char*>(slot_chunk(t, base, r + b, phase[b]));
  }
#pragma unroll
  for (int b = 0; b < kSlots; ++b) {
#pragma unroll
    for (int v = 0; v < kUnits; ++v) {
      if (r + b < t.world && first + v * threads < t.units) {
        held[b][v] = load_chunks(reinterpret_cast<const uint4*>(slot[b] + v * unit_step), phase[b]);
      }
    }
  }
}

// ---- The vector kernels' loads: aligned tables ----------------------------------------

// Slots r … r + kSlots − 1 (those below W) of the unit at `base` (unit_base) on a table whose
// slots and output share one phase (HalfPath::kVector): one aligned 16-byte load each, all
// issued before any is used.
template <int kSlots>
__device__ __forceinline__ void load_aligned_round(const HalfTable& t, const unsigned char* base,
                                                   std::uint32_t r, Unit (&held)[kSlots]) {
#pragma unroll
  for (int b = 0; b < kSlots; ++b) {
    if (r + b < t.world) {
      const uint4 v = *reinterpret_cast<const uint4*>(base + (r + b) * t.stride_bytes);
      held[b] = Unit{{v.x, v.y, v.z, v.w}};
    }
  }
}

// ---- The staged kernels' loads: through shared memory -----------------------------------
//
// A warp takes 32 consecutive units at a time (a group: lane i the group's unit i) and walks
// the rounds of kSlots slots of each group in turn. Each round's chunks are copied from global
// to shared memory asynchronously (cp.async, sm_80 on: 16 bytes a lane, not through L1), kStages
// − 1 rounds ahead of the one being added, so the data in flight waits in shared memory rather
// than in registers; a lane then reads its unit's chunk and the next one from there. A slot's
// 32 units span 32 consecutive aligned chunks plus, when its phase is not 0, one more (the
// last unit's next chunk), which lane 0 copies: every byte is requested from global memory
// once. Only the warp's own lanes read what it copied: __syncwarp orders them, no block
// barrier. Before sm_80 the copies are plain loads and stores (the same bits, no overlap).
inline constexpr unsigned kGroup = 32;             // units a warp takes at a time
inline constexpr unsigned kWarps = kThreads / 32;  // warps a block

template <int kSlots, int kStages>
struct WarpStages {
  uint4 chunk[kStages][kSlots][kGroup + 1];
};

__device__ __forceinline__ void copy_chunk(uint4* to, const uint4* from) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto shared = static_cast<unsigned>(__cvta_generic_to_shared(to));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared), "l"(from) : "memory");
#else
  *to = *from;
#endif
}

// Closes the copies issued since the last call into one group (an empty one too).
__device__ __forceinline__ void commit_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most kPending of this thread's groups are incomplete.
template <int kPending>
__device__ __forceinline__ void wait_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Where a warp is: unit group `group`, round from slot r.
struct StagedJob {
  std::size_t group;
  std::uint32_t r;
};

template <int kSlots>
__device__ __forceinline__ void advance(StagedJob& job, const HalfTable& t, std::size_t warps) {
  job.r += kSlots;
  if (job.r >= t.world) {
    job.r = 0;
    job.group += warps;
  }
}

// The units of group g a lane of the warp may hold (32, or fewer in the last group).
__device__ __forceinline__ unsigned group_units(const HalfTable& t, std::size_t group) {
  const std::size_t left = t.units - kGroup * group;
  return left < kGroup ? static_cast<unsigned>(left) : kGroup;
}

// Copies the job's chunks into `stage` (nothing when the job is past the last group).
template <int kSlots>
__device__ __forceinline__ void copy_round(const HalfTable& t, const StagedJob& job,
                                           std::size_t groups, unsigned lane,
                                           uint4 (&stage)[kSlots][kGroup + 1]) {
  if (job.group >= groups) return;
  const unsigned count = group_units(t, job.group);
  const unsigned char* base = unit_base(t, kGroup * job.group);
#pragma unroll
  for (int b = 0; b < kSlots; ++b) {
    if (job.r + b < t.world) {
      const std::uint32_t phase = slot_phase(t, job.r + b);
      const uint4* chunk = slot_chunk(t, base, job.r + b, phase);
      if (lane < count) copy_chunk(&stage[b][lane], chunk + lane);
      if (phase != 0 && lane == 0) copy_chunk(&stage[b][count], chunk + count);
    }
  }
}

// The high half of `lo` then the low half of `hi`: the elements one position on.
__device__ __forceinline__ std::uint32_t shifted(std::uint32_t lo, std::uint32_t hi) {
  return __byte_perm(lo, hi, 0x5432);
}

// Elements phase … phase + 7 of the 16 in own:next: the unit, at the output's phase. The
// phase is the same for every lane of the warp, so the switch is a uniform branch.
__device__ __forceinline__ Unit realign(const Chunks& c, std::uint32_t phase) {
  const uint4 a = c.own, b = c.next;
  switch (phase) {
    case 0:
      return Unit{{a.x, a.y, a.z, a.w}};
    case 1:
      return Unit{{shifted(a.x, a.y), shifted(a.y, a.z), shifted(a.z, a.w), shifted(a.w, b.x)}};
    case 2:
      return Unit{{a.y, a.z, a.w, b.x}};
    case 3:
      return Unit{{shifted(a.y, a.z), shifted(a.z, a.w), shifted(a.w, b.x), shifted(b.x, b.y)}};
    case 4:
      return Unit{{a.z, a.w, b.x, b.y}};
    case 5:
      return Unit{{shifted(a.z, a.w), shifted(a.w, b.x), shifted(b.x, b.y), shifted(b.y, b.z)}};
    case 6:
      return Unit{{a.w, b.x, b.y, b.z}};
    default:
      return Unit{{shifted(a.w, b.x), shifted(b.x, b.y), shifted(b.y, b.z), shifted(b.z, b.w)}};
  }
}

// ---- Pairs of elements (one 32-bit word of a unit) ---------------------------------------

// Both elements of a word widened to binary32 (exact): the low half first.
template <bool kF16>
__device__ __forceinline__ float2 widen_pair(std::uint32_t w) {
  if constexpr (kF16) {
    __half2 h;
    static_assert(sizeof(h) == sizeof(w));
    memcpy(&h, &w, sizeof(w));
    return __half22float2(h);
  } else {
    return make_float2(float_from_bits(w << 16), float_from_bits(w & 0xFFFF0000u));
  }
}

// Two binary32 values rounded to the dtype to nearest-even (subnormals kept, overflow to ±Inf)
// and packed, `lo` in the low half: one conversion for both on sm_80 and later. A NaN comes out
// as some NaN (the hardware's, not necessarily the law's canonical one): callers check
// any_nan_lane and write NaN elements through narrow().
template <bool kF16>
__device__ __forceinline__ std::uint32_t narrow_pair(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  std::uint32_t w;
  if constexpr (kF16) {
    const __half2 h = __floats2half2_rn(lo, hi);
    memcpy(&w, &h, sizeof(w));
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    memcpy(&w, &h, sizeof(w));
  }
  return w;
#else
  return static_cast<std::uint32_t>(narrow<kF16>(lo)) |
         (static_cast<std::uint32_t>(narrow<kF16>(hi)) << 16);
#endif
}

// The dtype's ±Inf magnitude (its largest non-NaN bit pattern less the sign).
template <bool kF16>
inline constexpr std::uint32_t kInfMagnitude = kF16 ? 0x7C00u : 0x7F80u;

// Whether a lane of `magnitudes` (two 15-bit magnitudes, or their maxima) is a NaN pattern:
// adding 0x8000 − Inf − 1 to each lane sets its top bit exactly then (no lane carries into the
// other: a lane is at most 0x7FFF).
template <bool kF16>
__device__ __forceinline__ bool any_nan_lane(std::uint32_t magnitudes) {
  constexpr std::uint32_t kProbe = (0x8000u - kInfMagnitude<kF16> - 1u) * 0x00010001u;
  return ((magnitudes + kProbe) & 0x80008000u) != 0;
}

// One element the double rounded to the dtype to nearest-even, subnormals kept, overflow to
// ±Inf: one conversion (cvt.rn.bf16.f64 on sm_90, cvt.rn.f16.f64) where there is one; else
// rounded to odd in binary32 first (exact/exact_stacked_half_kernel.cu's argument), then to the
// dtype. Not for NaN (the callers send NaN sums to the law).
template <bool kF16>
__device__ __forceinline__ std::uint16_t round_double(double y) {
  if constexpr (kF16) {
    return __half_as_ushort(__double2half(y));
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return __bfloat16_as_ushort(__double2bfloat16(y));
#else
    const float truncated = __double2float_rz(y);
    const bool inexact = static_cast<double>(truncated) != y;
    return narrow_bf16(float_from_bits(float_bits(truncated) | (inexact ? 1u : 0u)));
#endif
  }
}

// Units a warp may set aside (staged_units' kDefer) before it stops to finish them.
inline constexpr unsigned kQueue = 64;

// The staged walk over the units (the scheme above), from job `start` (group, round 0), with
// the warp's stages `mine` (a block's are __shared__ WarpStages<…> stages[kWarps]): for
// each round of each of the warp's groups, `add(unit, first)` for slots r … r + kSlots − 1 in
// ascending order (first: slot 0, which starts the sums), on the lanes that hold a unit, then
// `finish(u)` after the unit's last round. add and finish see nothing of the other lanes.
// kDefer: finish returns true for a unit it left unwritten, whose index goes to the warp's
// `queue` (`queued` entries); once the queue might not hold another round of them, the walk
// stops after that unit and returns the job it stopped at (every copy landed), for the caller
// to finish the queue out of the loop and walk on. Otherwise (and at the end) it returns a job
// past the last group.
template <int kSlots, int kStages, bool kDefer, typename Add, typename Finish>
__device__ __forceinline__ StagedJob staged_units(const HalfTable& t, StagedJob start,
                                                  WarpStages<kSlots, kStages>& mine,
                                                  std::size_t* queue, unsigned& queued, Add&& add,
                                                  Finish&& finish) {
  static_assert(kStages >= 2, "a round in flight while another is added");
  const unsigned lane = threadIdx.x % 32;
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * kWarps;
  const std::size_t groups = (t.units + kGroup - 1) / kGroup;
  StagedJob produce = start;
  StagedJob consume = start;
  if (consume.group >= groups) return consume;
#pragma unroll
  for (int stage = 0; stage < kStages - 1; ++stage) {
    copy_round<kSlots>(t, produce, groups, lane, mine.chunk[stage]);
    commit_copies();
    advance<kSlots>(produce, t, warps);
  }
  unsigned stage = 0;  // the stage being added; the one before it is refilled
  while (consume.group < groups) {
    copy_round<kSlots>(t, produce, groups, lane, mine.chunk[(stage + kStages - 1) % kStages]);
    commit_copies();
    advance<kSlots>(produce, t, warps);
    wait_copies<kStages - 1>();  // this thread's copies of the round to add have landed
    __syncwarp();                // and every lane's
    const bool last = consume.r + kSlots >= t.world;  // the units' last round
    const std::size_t unit = kGroup * consume.group + lane;
    bool deferred = false;
    if (lane < group_units(t, consume.group)) {
#pragma unroll
      for (int b = 0; b < kSlots; ++b) {
        if (consume.r + b >= t.world) break;
        const std::uint32_t phase = slot_phase(t, consume.r + b);
        Chunks c;
        c.own = mine.chunk[stage][b][lane];
        if (phase != 0) c.next = mine.chunk[stage][b][lane + 1];
        add(realign(c, phase), b == 0 && consume.r == 0);
      }
      if (last) deferred = finish(unit);
    }
    if constexpr (kDefer) {
      if (last) {
        const unsigned set_aside = __ballot_sync(0xFFFFFFFFu, deferred);
        if (deferred) queue[queued + __popc(set_aside & ((1u << lane) - 1u))] = unit;
        queued += __popc(set_aside);
      }
    }
    __syncwarp();  // every lane done with the stage before it is refilled
    advance<kSlots>(consume, t, warps);
    stage = (stage + 1) % kStages;
    if constexpr (kDefer) {
      if (last && queued > kQueue - kGroup) break;
    }
  }
  wait_copies<0>();
  __syncwarp();
  return consume;
}

#endif  // __CUDACC__

}  // namespace rv::half_kernel_detail
