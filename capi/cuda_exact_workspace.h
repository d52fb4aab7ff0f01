// The scratch of the C ABI's exact reduction on one GPU: int64 words for two W-slot tables
// (the running sum and the slot being added), the plan's block slots, and an event that
// marks the end of the last call that used them. A call on any stream first waits (on the
// stream, not the host) for that event, so the scratch is never shared by two calls in
// flight; it only grows, and grows after the device is done with the old buffers.
// Private to capi/, CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "core/exact/exact_plan.h"

namespace rv::capi {

class ExactWorkspace {
 public:
  explicit ExactWorkspace(int device) : device_(device) {}
  ExactWorkspace(const ExactWorkspace&) = delete;
  ExactWorkspace& operator=(const ExactWorkspace&) = delete;

  // The workspace of `device`, created on first use; never destroyed before exit (a CUDA
  // call from a static destructor would run after the runtime has gone).
  static ExactWorkspace& of(int device);
  // Frees every device's buffers once the work using them has finished.
  static void release_all();

  // One reduction's hold on the workspace: locks it, makes `stream` wait (on the device) for
  // the previous reduction's work on the scratch, and, when it goes, records the end of this
  // reduction's work on `stream` — also after an error, since kernels already enqueued may
  // still read the scratch.
  class Lease {
   public:
    Lease(ExactWorkspace& workspace, cudaStream_t stream);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

   private:
    ExactWorkspace& workspace_;
    cudaStream_t stream_;
    std::lock_guard<std::mutex> lock_;
  };

  // At least `count` words of each of the two tables, `stride` words apart (a multiple of two,
  // so the combine kernel takes its vector path); synchronises `stream` before it regrows.
  std::int64_t* words(std::size_t count, std::size_t& stride, cudaStream_t stream);
  // The plan's block slots in device memory, uploaded on `stream`.
  const ExactBlockSlot* upload_slots(const ExactPlan& plan, cudaStream_t stream);

 private:
  void release();  // mutex held; waits for the last call's work

  int device_;
  std::mutex mutex_;
  std::int64_t* words_ = nullptr;  // 2 × words_capacity_
  std::size_t words_capacity_ = 0;
  ExactBlockSlot* slots_ = nullptr;
  std::size_t slots_capacity_ = 0;
  cudaEvent_t done_ = nullptr;  // recorded when a lease ends
};

}  // namespace rv::capi
