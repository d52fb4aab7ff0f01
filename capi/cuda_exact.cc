// The exact contract of the C ABI on one GPU, over a stacked table of W slots: the dataflow of
// core/exact/exact_reduction.h's exact_reduce_stacked with core/cuda/exact_kernel.h's kernels
// (the same element laws, so the same bits). The W slots' agreement words are max-combined
// and their digits summed pairwise on the device — integer operations, so the order of the
// slots cannot show — then rounded into the output.
#include <vector>

#include "capi/cuda_exact_workspace.h"
#include "core/cuda/cuda_check.h"
#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "capi/stacked_arguments.h"
#include "core/cuda/exact_kernel.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_plan.h"

namespace rv::capi {
namespace {

void exact_reduce_on_device(const float* d_stacked, std::uint32_t world, std::size_t slot_stride,
                            std::size_t n, Op op, float* d_out, cudaStream_t stream,
                            ExactWorkspace& workspace) {
  const auto slot = [&](std::uint32_t r) { return d_stacked + r * slot_stride; };
  const ExactWorkspace::Lease lease(workspace, stream);

  // The agreement round: slot 0's words, then each further slot's max-combined into them.
  const std::size_t agreement_count = exact_block_count(n) * exact::kAgreementWords;
  std::size_t stride = 0;
  std::int64_t* words = workspace.words(agreement_count, stride, stream);
  launch_exact_agreement_words(slot(0), n, words, stream);
  for (std::uint32_t r = 1; r < world; ++r) {
    launch_exact_agreement_words(slot(r), n, words + stride, stream);
    launch_combine_words(words, 2, stride, agreement_count, IntReduction::kMax, words, stream);
  }
  std::vector<std::int64_t> agreed(agreement_count);
  RV_CUDA_CHECK(cudaMemcpyAsync(agreed.data(), words, agreement_count * sizeof(std::int64_t),
                                     cudaMemcpyDeviceToHost, stream));
  RV_CUDA_CHECK(cudaStreamSynchronize(stream));
  const ExactPlan plan = plan_exact_blocks(agreed.data(), n, world);

  // The sum round: slot 0's digits, then each further slot's added to them.
  words = workspace.words(plan.words, stride, stream);
  const ExactPlanView view = view_of(plan, workspace.upload_slots(plan, stream));
  launch_exact_encode(slot(0), view, words, stream);
  for (std::uint32_t r = 1; r < world; ++r) {
    launch_exact_encode(slot(r), view, words + stride, stream);
    launch_combine_words(words, 2, stride, plan.words, IntReduction::kSum, words, stream);
  }
  launch_exact_round(words, view, op, d_out, stream);
}

}  // namespace
}  // namespace rv::capi

extern "C" rv_status rv_cuda_exact_reduce_stacked(int device, const float* d_stacked,
                                                  uint32_t world, size_t slot_stride, size_t n,
                                                  int op, float* d_out, void* cuda_stream) {
  return rv::capi::guarded("rv_cuda_exact_reduce_stacked", [&] {
    const rv::Op parsed = rv::capi::op_from_c(op);
    rv::capi::check_stacked_arguments(
        {d_stacked, world, slot_stride, n, d_out, rv::exact::kMaxWorld});
    if (n == 0) return;
    const rv::cuda_detail::ScopedDevice scope(device);
    rv::capi::exact_reduce_on_device(d_stacked, world, slot_stride, n, parsed, d_out,
                                     static_cast<cudaStream_t>(cuda_stream),
                                     rv::capi::ExactWorkspace::of(device));
  });
}

extern "C" rv_status rv_cuda_release_workspaces(void) {
  return rv::capi::guarded("rv_cuda_release_workspaces",
                           [] { rv::capi::ExactWorkspace::release_all(); });
}
