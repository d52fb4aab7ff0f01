// Stand-in for <gloo/common/memory.h>, which Debian's libgloo-dev 0.0~git20220518 does not
// ship although its <gloo/transport/tcp/pair.h> and <context.h> include it. Only used when
// the system has no such header (CMakeLists.txt). member_pair.h derives from tcp::Pair, so
// it needs those headers; the only thing it needs of this one is the size of the three
// pointer wrappers inside tcp::Pair's members: each holds one std::shared_ptr or
// std::weak_ptr, as Gloo's does. The code that uses them runs inside libgloo, compiled with
// Gloo's own header; MemberPair touches none of the members they precede, and leaves room
// after its base in case the library's pair is larger than these headers say.
#pragma once

#include <memory>

namespace gloo {

template <typename T>
class WeakNonOwningPtr;

// A strong reference that exists only while the object is alive.
template <typename T>
class NonOwningPtr final {
 public:
  NonOwningPtr() = default;
  explicit NonOwningPtr(const WeakNonOwningPtr<T>& weak) : ptr_(weak.ptr_.lock()) {}
  T* operator->() const noexcept { return ptr_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(ptr_); }

 private:
  std::shared_ptr<T> ptr_;
};

template <typename T>
class ShareableNonOwningPtr;

// A weak reference to an object that some ShareableNonOwningPtr roots.
template <typename T>
class WeakNonOwningPtr final {
 public:
  WeakNonOwningPtr() = default;
  explicit WeakNonOwningPtr(const ShareableNonOwningPtr<T>& root) : ptr_(root.ptr_) {}

 private:
  std::weak_ptr<T> ptr_;
  friend class NonOwningPtr<T>;
};

// The root reference to an object it does not own.
template <typename T>
class ShareableNonOwningPtr final {
 public:
  explicit ShareableNonOwningPtr(T* object) : ptr_(object, [](T*) {}) {}

 private:
  std::shared_ptr<T> ptr_;
  friend class WeakNonOwningPtr<T>;
};

}  // namespace gloo
