// The round kernel for bf16 and f16 (docs/DESIGN.md §2.5): each element's exact sum (or mean)
// rounded once, straight to the dtype, by exact_law.h's templated rounding (round_one_limb<F>,
// round_two_limbs<F>, round_exact_sum<F>), and written as its binary32 widening, as
// host_exact_law.cc's round_block_by_law does on the host. Rounding to binary32 first and then
// to the dtype would round twice, so none of the f32 kernel's binary32 shortcuts (the float
// conversion of D, the double quotient) applies here: every element takes the law itself.
//
// Mapping: one CUDA block of 256 threads per exact block (grid-striding over the blocks), a
// thread every 256th element, so each warp's loads of a limb and its stores are contiguous.
// The law's mean divides in 64-bit integers (a software routine on the GPU); the live
// reducers round each element once per all-reduce, after the transport's int64 sum, so this
// is not on the path the half-precision stacked kernels are measured on.
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/cuda/exact/exact_kernel_detail.h"
#include "core/dtype_law.h"
#include "core/error.h"
#include "core/exact/exact_law.h"

namespace rv {
namespace {

using exact_kernel_detail::address;
using exact_kernel_detail::as_stream;
using exact_kernel_detail::check_plan;
using exact_kernel_detail::check_pointer;
using exact_kernel_detail::grid_for;
using exact_kernel_detail::kThreads;

// One element's result as F's bits: the law's path for the block's shape, as on the host.
template <class F>
__device__ std::uint32_t round_element(const std::int64_t* in, std::size_t count, std::size_t i,
                                       const ExactBlockSlot& slot, const ExactPlanView& plan,
                                       bool mean) {
  if (slot.limbs <= 1 && slot.special == 0) {
    const std::int64_t d = slot.limbs == 1 ? in[i] : 0;
    return exact::round_one_limb<F>(d, slot.bottom, plan.world, mean);
  }
  if (slot.limbs == 2 && slot.special == 0) {
    return exact::round_two_limbs<F>(in[i], in[count + i], plan.limb_bits, slot.bottom, plan.world,
                                     mean);
  }
  exact::ExactSum s{};
  for (int j = 0; j < slot.limbs; ++j) {
    exact::add_shifted(s, in[static_cast<std::size_t>(j) * count + i], j * plan.limb_bits);
  }
  const std::int64_t special =
      slot.special != 0 ? in[static_cast<std::size_t>(slot.limbs) * count + i] : 0;
  return exact::round_exact_sum<F>(s, slot.bottom, plan.world, mean, slot.special != 0, special);
}

template <class F>
__global__ void __launch_bounds__(kThreads)
    round_half_kernel(const std::int64_t* sums, ExactPlanView plan, bool mean, float* out) {
  for (std::size_t b = blockIdx.x; b < plan.block_count; b += gridDim.x) {
    const ExactBlockSlot slot = plan.blocks[b];
    const std::size_t count =
        min(static_cast<std::size_t>(exact::kBlock), plan.count - b * exact::kBlock);
    const std::int64_t* in = sums + slot.offset;
    float* y = out + b * exact::kBlock;
    for (std::size_t i = threadIdx.x; i < count; i += kThreads) {
      y[i] = widen_format<F>(round_element<F>(in, count, i, slot, plan, mean));
    }
  }
}

template <class F>
void launch_for(const std::int64_t* sums, const ExactPlanView& plan, bool mean, float* out,
                void* cuda_stream) {
  const auto kernel = round_half_kernel<F>;
  kernel<<<grid_for(kernel, plan.block_count), kThreads, 0, as_stream(cuda_stream)>>>(sums, plan,
                                                                                      mean, out);
  RV_CUDA_CHECK_LAUNCH("round_half_kernel");
}

}  // namespace

void launch_exact_round(const std::int64_t* d_sums, const ExactPlanView& plan, Op op, DType dtype,
                        float* d_out, void* cuda_stream) {
  if (dtype == DType::kF32) return launch_exact_round(d_sums, plan, op, d_out, cuda_stream);
  constexpr const char* kWho = "launch_exact_round";
  check_plan(plan, kWho);
  if (plan.count == 0) return;
  check_pointer(d_sums, kWho, "the sums");
  check_pointer(d_out, kWho, "the output");
  if (address(d_out) < address(d_sums + plan.words) &&
      address(d_sums) < address(d_out + plan.count)) {
    throw InputError("launch_exact_round: the output overlaps the summed words");
  }
  const bool mean = op == Op::kMean;
  if (dtype == DType::kBF16) {
    launch_for<BFloat16Format>(d_sums, plan, mean, d_out, cuda_stream);
  } else {
    launch_for<Float16Format>(d_sums, plan, mean, d_out, cuda_stream);
  }
}

}  // namespace rv
