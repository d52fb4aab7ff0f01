#include <cstdlib>
#include <cstring>
#include <new>

#include "core/exact/host_exact.h"
#include "core/reducer/exact_device.h"

namespace rv {
namespace {

class HostExactDevice final : public ExactDevice {
 public:
  const char* name() const override { return "cpu"; }
  std::int64_t* allocate_words(std::size_t n) override {
    const std::size_t bytes = ((n ? n : 1) * sizeof(std::int64_t) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<std::int64_t*>(p);
  }
  void free_words(std::int64_t* p) override { std::free(p); }
  void agreement_words(const float* values, std::size_t n, std::int64_t* words) override {
    exact_agreement_words(values, n, words);
  }
  void download_words(std::int64_t* host, const std::int64_t* words, std::size_t n) override {
    if (n != 0 && host != words) std::memmove(host, words, n * sizeof *words);
  }
  void encode(const float* values, const ExactPlan& plan, std::int64_t* words) override {
    exact_encode(values, plan, words);
  }
  void round(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out,
             DType dtype) override {
    exact_round(sums, plan, op, out, dtype);
  }
  void synchronize() override {}
};

}  // namespace

ExactDevice& host_exact_device() {
  static HostExactDevice device;
  return device;
}

}  // namespace rv
