// The Transport over one connected Gloo context. Everything the reducers move goes through
// checked exchanges (sizes agreed first, then per-peer unbound-buffer transfers); only
// `library_sum` hands the data to a Gloo collective, the new-style ring allreduce.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/transport/gloo/gloo_failure.h"
#include "core/transport/transport.h"

namespace gloo {
class Context;
}  // namespace gloo

namespace rv {
namespace gloo_detail {

class GlooContextTransport final : public Transport {
 public:
  GlooContextTransport(std::shared_ptr<::gloo::Context> context, std::chrono::milliseconds timeout);
  ~GlooContextTransport() override;

  std::uint32_t rank() const override { return rank_; }
  std::uint32_t world_size() const override { return world_; }
  std::string name() const override { return "gloo"; }
  std::string library_version() const override;

  void all_gather(const void* in, void* out, std::size_t bytes) override;
  void exchange(const ExchangePlan& plan) override;
  void broadcast(void* buf, std::size_t bytes, std::uint32_t root) override;
  void barrier() override;
  void library_sum(float* values, std::size_t n) override;
  std::int64_t max_int(std::int64_t value) override;

 private:
  // Runs one operation: refuses at once when an earlier one failed, gives the body the
  // operation's deadline, and on any failure marks the transport dead and rethrows as an rv
  // error whose message starts with the operation's label.
  template <typename Body>
  void run(const char* op, Body body);
  std::string label(const char* op) const;
  // Sizes agreed across all ranks (unless the plan says they already are), then the local
  // copy and the per-peer payload round.
  void checked_exchange(const std::string& label, const ExchangePlan& plan,
                        const Deadline& deadline);
  // All-gathers every rank's counts and checks the whole matrix: InputError on every rank
  // when they differ. Returns whether any rank sends anything to another.
  bool agree_on_counts(const std::string& label, const ExchangePlan& plan,
                       const Deadline& deadline);
  void ring_allreduce(const std::string& label, float* values, std::size_t n,
                      const Deadline& deadline);

  std::shared_ptr<::gloo::Context> context_;
  std::uint32_t rank_, world_;
  std::chrono::milliseconds timeout_;
  std::uint32_t allreduce_tag_ = 0;
  std::string failure_;  // the first failure; the transport is dead once it is set
};

}  // namespace gloo_detail
}  // namespace rv
