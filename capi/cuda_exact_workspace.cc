#include "capi/cuda_exact_workspace.h"

#include <map>
#include <memory>

#include "core/cuda/cuda_check.h"

namespace rv::capi {
namespace {

std::mutex& registry_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

std::map<int, std::unique_ptr<ExactWorkspace>>& registry() {
  static auto* workspaces = new std::map<int, std::unique_ptr<ExactWorkspace>>;
  return *workspaces;
}

std::size_t round_up_even(std::size_t count) { return count + count % 2; }

}  // namespace

ExactWorkspace& ExactWorkspace::of(int device) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  auto& slot = registry()[device];
  if (!slot) slot = std::make_unique<ExactWorkspace>(device);
  return *slot;
}

void ExactWorkspace::release_all() {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  for (auto& [device, workspace] : registry()) {
    const std::lock_guard<std::mutex> held(workspace->mutex_);
    const cuda_detail::ScopedDevice scope(device);
    workspace->release();
  }
}

ExactWorkspace::Lease::Lease(ExactWorkspace& workspace, cudaStream_t stream)
    : workspace_(workspace), stream_(stream), lock_(workspace.mutex_) {
  if (workspace_.done_ == nullptr) {
    RV_CUDA_CHECK(cudaEventCreateWithFlags(&workspace_.done_, cudaEventDisableTiming));
    return;
  }
  RV_CUDA_CHECK(cudaStreamWaitEvent(stream_, workspace_.done_, 0));
}

ExactWorkspace::Lease::~Lease() {
  // Nothing to report from a destructor: a failed record leaves the previous mark, and the
  // error behind it has been raised already or will be by the next call.
  if (workspace_.done_ != nullptr) (void)cudaEventRecord(workspace_.done_, stream_);
}

std::int64_t* ExactWorkspace::words(std::size_t count, std::size_t& stride, cudaStream_t stream) {
  stride = round_up_even(count);
  if (stride > words_capacity_) {
    // Work already enqueued on `stream` (this call's, and through begin() every earlier
    // call's) may still read the old buffer.
    RV_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (words_ != nullptr) RV_CUDA_CHECK(cudaFree(words_));
    words_ = nullptr;
    words_capacity_ = 0;
    void* p = nullptr;
    RV_CUDA_CHECK(cudaMalloc(&p, 2 * stride * sizeof(std::int64_t)));
    words_ = static_cast<std::int64_t*>(p);
    words_capacity_ = stride;
  }
  return words_;
}

const ExactBlockSlot* ExactWorkspace::upload_slots(const ExactPlan& plan, cudaStream_t stream) {
  const std::size_t count = plan.blocks.size();
  if (count > slots_capacity_) {
    RV_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (slots_ != nullptr) RV_CUDA_CHECK(cudaFree(slots_));
    slots_ = nullptr;
    slots_capacity_ = 0;
    void* p = nullptr;
    RV_CUDA_CHECK(cudaMalloc(&p, count * sizeof(ExactBlockSlot)));
    slots_ = static_cast<ExactBlockSlot*>(p);
    slots_capacity_ = count;
  }
  if (count != 0) {
    // A pageable source is staged before the call returns, so the plan may go afterwards.
    RV_CUDA_CHECK(cudaMemcpyAsync(slots_, plan.blocks.data(), count * sizeof(ExactBlockSlot),
                                       cudaMemcpyHostToDevice, stream));
  }
  return slots_;
}

void ExactWorkspace::release() {
  if (done_ != nullptr) RV_CUDA_CHECK(cudaEventSynchronize(done_));
  if (words_ != nullptr) RV_CUDA_CHECK(cudaFree(words_));
  if (slots_ != nullptr) RV_CUDA_CHECK(cudaFree(slots_));
  words_ = nullptr;
  slots_ = nullptr;
  words_capacity_ = 0;
  slots_capacity_ = 0;
}

}  // namespace rv::capi
