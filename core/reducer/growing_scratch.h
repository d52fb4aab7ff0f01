// Scratch memory a reducer keeps across calls on its device, grown when a call needs more: the
// fixed-order reducer's stacked tables, the exact reducer's words and owner tables, the run's
// arena buffer. Each device allocates and frees its own way (FixedOrderDevice, ExactDevice), so the
// two are given as functions. Growing frees the old block first (the device waits for work
// still using it) and leaves the scratch empty if the new allocation throws.
#pragma once

#include <cstddef>
#include <functional>
#include <utility>

namespace rv {

template <typename T>
class GrowingScratch {
 public:
  GrowingScratch(std::function<T*(std::size_t)> allocate, std::function<void(T*)> free)
      : allocate_(std::move(allocate)), free_(std::move(free)) {}
  ~GrowingScratch() { release(); }
  GrowingScratch(const GrowingScratch&) = delete;
  GrowingScratch& operator=(const GrowingScratch&) = delete;

  // At least n elements, the same block as the last call when it holds enough.
  T* at_least(std::size_t n) {
    if (data_ != nullptr && capacity_ >= n) return data_;
    release();
    data_ = allocate_(n);
    capacity_ = n;
    return data_;
  }

 private:
  void release() {
    if (data_ != nullptr) free_(data_);
    data_ = nullptr;
    capacity_ = 0;
  }

  std::function<T*(std::size_t)> allocate_;
  std::function<void(T*)> free_;
  T* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace rv
