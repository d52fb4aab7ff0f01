// The combination of W word buffers in one device's memory that the library's int64
// all-reduce does (sum or max), for the one-GPU loopback world and the tests: longlong2 units
// where every slot allows them, scalars otherwise.
#include <cstdint>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/cuda/exact/exact_kernel_detail.h"
#include "core/error.h"

namespace rv {
namespace {

using exact_kernel_detail::address;
using exact_kernel_detail::as_stream;
using exact_kernel_detail::check_pointer;
using exact_kernel_detail::grid_for;
using exact_kernel_detail::kThreads;

template <bool kMax>
__device__ __forceinline__ std::int64_t combine(std::int64_t a, std::int64_t b) {
  if constexpr (kMax) {
    return a > b ? a : b;
  } else {
    // In unsigned arithmetic: the same bits as the int64 sum, without signed overflow's
    // undefined behaviour should a caller break the no-overflow promise.
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  }
}

struct CombineArgs {
  const std::int64_t* stacked;
  std::int64_t* out;
  std::size_t stride;
  std::size_t n;
  std::size_t units;  // longlong2 units (0 on the scalar path)
  std::uint32_t slots;
};

template <bool kMax>
__global__ void __launch_bounds__(kThreads) combine_kernel(CombineArgs a) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t u = thread; u < a.units; u += threads) {
    longlong2 acc = reinterpret_cast<const longlong2*>(a.stacked)[u];
    for (std::uint32_t r = 1; r < a.slots; ++r) {
      const longlong2 v = reinterpret_cast<const longlong2*>(a.stacked + r * a.stride)[u];
      acc.x = combine<kMax>(acc.x, v.x);
      acc.y = combine<kMax>(acc.y, v.y);
    }
    reinterpret_cast<longlong2*>(a.out)[u] = acc;
  }
  for (std::size_t i = 2 * a.units + thread; i < a.n; i += threads) {
    std::int64_t acc = a.stacked[i];
    for (std::uint32_t r = 1; r < a.slots; ++r)
      acc = combine<kMax>(acc, a.stacked[r * a.stride + i]);
    a.out[i] = acc;
  }
}

}  // namespace

void launch_combine_words(const std::int64_t* d_stacked, std::uint32_t slots,
                          std::size_t slot_stride, std::size_t n, IntReduction op,
                          std::int64_t* d_out, void* cuda_stream) {
  RV_ENFORCE_GE(InputError, slots, 1u, "launch_combine_words: at least one slot");
  if (n == 0) return;
  check_pointer(d_stacked, "launch_combine_words", "the slots");
  check_pointer(d_out, "launch_combine_words", "the output");
  for (std::uint32_t r = 0; r < slots; ++r) {
    const std::int64_t* slot = d_stacked + static_cast<std::size_t>(r) * slot_stride;
    if (slot == d_out) continue;  // in place into slot 0 (or a zero stride): read, then written
    if (address(slot) < address(d_out + n) && address(d_out) < address(slot + n)) {
      throw InputError("launch_combine_words: the output overlaps slot " + std::to_string(r) +
                       " (only an exact in-place combine into slot 0 is allowed)");
    }
  }
  CombineArgs args{d_stacked, d_out, slot_stride, n, 0, slots};
  const bool vector = address(d_stacked) % 16 == 0 && address(d_out) % 16 == 0 &&
                      (slots == 1 || slot_stride % 2 == 0);
  if (vector) args.units = n / 2;
  const std::size_t work = vector ? args.units + n % 2 : n;
  const auto stream = as_stream(cuda_stream);
  if (op == IntReduction::kMax) {
    const unsigned grid = grid_for(combine_kernel<true>, (work + kThreads - 1) / kThreads);
    combine_kernel<true><<<grid, kThreads, 0, stream>>>(args);
  } else {
    const unsigned grid = grid_for(combine_kernel<false>, (work + kThreads - 1) / kThreads);
    combine_kernel<false><<<grid, kThreads, 0, stream>>>(args);
  }
  RV_CUDA_CHECK_LAUNCH("combine_kernel");
}

}  // namespace rv
