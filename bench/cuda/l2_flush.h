// The L2 cache emptied of dirty lines between timed operations (harness.h, --flush_l2).
//
// Why: at slots of tens of MiB the GPU's L2 (50 MB on an H100) holds a sizeable share of an
// operation's writes when its end event fires. Without a flush, each timed operation first pays
// for the write-back of the dirty lines the one before it left: the kernel after a copy pays
// for up to an L2 of the copy's writes, the copy after a kernel only for the kernel's output,
// which at 16 Mi half elements is 32 MiB. Reading a scratch buffer several times the L2's size
// evicts every dirty line (writing it back) outside the timed span, so each timed operation
// starts from an L2 of clean lines and pays only for its own traffic.
#pragma once

#include <cstddef>

namespace rv::bench {

class L2Flush {
 public:
  // A scratch buffer of four times the current device's L2 (at least 64 MiB), read by the
  // flush on that device.
  L2Flush();
  ~L2Flush();
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;

  // Enqueues the read of the whole scratch buffer on `cuda_stream`.
  void enqueue(void* cuda_stream) const;
  std::size_t bytes() const { return bytes_; }

 private:
  void* scratch_ = nullptr;
  void* sink_ = nullptr;  // one word the read kernel writes only when the data says so
  std::size_t bytes_ = 0;
  unsigned blocks_ = 0;  // eight a multiprocessor of the device it was made on
};

}  // namespace rv::bench
