// The Transport over one connected Gloo context. Everything the reducers move goes through
// checked exchanges (sizes agreed first, then per-peer unbound-buffer transfers); only
// `library_sum` hands the data to a Gloo collective, the new-style ring allreduce.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/error.h"
#include "core/transport/gloo/gloo_failure.h"
#include "core/transport/gloo/peer_transfers.h"
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
  // Truly in flight for plans whose counts are agreed (the pieces of the fixed-order
  // reducer); a plan that needs its counts checked runs at once, as exchange.
  std::unique_ptr<PendingExchange> start_exchange(const ExchangePlan& plan) override;
  void broadcast(void* buf, std::size_t bytes, std::uint32_t root) override;
  void barrier() override;
  void library_sum(float* values, std::size_t n) override;
  void library_sum_half(void* values, std::size_t n, DType dtype) override;
  std::optional<std::string> library_sum_unavailable(DType dtype) const override;
  // torch's ProcessGroupGloo reduce-scatter: Gloo's ring allreduce, each rank keeping its
  // shard (binary32; the halves are refused as library_sum_unavailable says).
  void library_reduce_scatter(void* values, std::size_t shard_size, DType dtype) override;
  std::optional<std::string> library_reduce_scatter_unavailable(DType dtype) const override;
  std::int64_t max_int(std::int64_t value) override;
  void all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) override;
  void all_reduce_int64_counts_agreed(std::int64_t* values, std::size_t n,
                                      IntReduction op) override;

 private:
  // Runs one operation: refuses at once when an earlier one failed, gives the body the
  // operation's deadline, and on any failure marks the transport dead and rethrows as an rv
  // error whose message starts with the operation's label.
  template <typename Body>
  void run(const char* op, Body body) {
    const std::string where = label(op);
    refuse_if_failed(where);
    retire_buffers();
    const Deadline deadline(timeout_);
    guarded(where, [&] { body(where, deadline); });
  }
  // Runs body; any failure marks the transport dead and is rethrown as an rv error whose
  // message starts with `where`.
  template <typename Body>
  void guarded(const std::string& where, Body body) {
    try {
      body();
    } catch (const Error& e) {
      if (failure_.empty()) failure_ = e.what();
      throw;
    } catch (...) {
      const std::string text = where + ": " + current_exception_text();
      if (failure_.empty()) failure_ = text;
      throw RuntimeFailure(text);
    }
  }
  void refuse_if_failed(const std::string& where) const;
  // Completed payload buffers are destroyed one operation after the one that retired them:
  // by then Gloo's I/O thread has long let go of them (see PeerRound), even when the next
  // operation starts right after the wait that retired them (a pipeline of exchanges).
  void retire_buffers();
  std::string label(const char* op) const;

  // An exchange in flight, and the posting it shares with checked_exchange: the payload
  // sends, the local copy, and (with `receive`) every payload receive.
  class Pending;
  std::vector<Pending*> in_flight_;  // started, not yet destroyed
  void post_payload(PeerRound& payload, const ExchangePlan& plan, bool receive);
  // InputError on every rank when the ranks' ExchangePlan::agreed_value differ (read from
  // the header rows of the exchange's count round).
  void check_agreed_value(const std::string& where, const ExchangePlan& plan) const;

  // A header: the 2 × W byte counts of an exchange, then up to kInlineBytes of data, so
  // small all-gathers (a length, an agreement record, max_int) take one round, not two.
  static constexpr std::size_t kInlineBytes = 256;
  // The header round: every rank sends every peer its header row and receives theirs into
  // rows_ (row r from rank r), on buffers made once for the transport's life.
  void post_header_round(PeerRound& round, const std::vector<std::uint64_t>& counts,
                         const void* inline_data = nullptr, std::size_t inline_bytes = 0);
  const unsigned char* inline_of(std::uint32_t rank) const;
  // An all-gather of at most kInlineBytes carried in the header round alone; the counts in
  // the rows check that every rank gave the same size.
  void small_all_gather(const std::string& label, const void* in, void* out, std::size_t bytes,
                        const Deadline& deadline);
  // The local copy and the per-peer payload, with the byte counts agreed in a header round
  // (unless the plan says they already are): InputError on every rank when two disagree.
  void checked_exchange(const std::string& label, const ExchangePlan& plan,
                        const Deadline& deadline);
  // Gloo's ring allreduce of n elements of T in place, with Gloo's element function.
  using ReduceFunction = void (*)(void*, const void*, const void*, std::size_t);
  template <typename T>
  void ring_allreduce(const std::string& label, T* values, std::size_t n, ReduceFunction reduce,
                      const Deadline& deadline);
  // Refuses, on every rank, a collective whose element count differs between ranks.
  void agree_on_count(const std::string& label, std::size_t n, const Deadline& deadline);
  // Gloo's ring allreduce of int64, after agree_on_count unless counts_agreed.
  void int64_all_reduce(std::int64_t* values, std::size_t n, IntReduction op, bool counts_agreed);

  std::shared_ptr<::gloo::Context> context_;
  std::uint32_t rank_, world_;
  std::chrono::milliseconds timeout_;
  std::uint32_t allreduce_tag_ = 0;
  std::string failure_;  // the first failure; the transport is dead once it is set
  // Declared after context_, so destroyed before it.
  std::vector<std::uint64_t> row_, rows_;
  std::vector<UnboundBufferPtr> row_send_, row_recv_;  // per peer, over row_ and rows_
  // Completed payload buffers (see PeerRound): those of the current operation, and those of
  // the one before, destroyed at the start of the next (retire_buffers).
  std::vector<UnboundBufferPtr> retiring_, retired_;
};

}  // namespace gloo_detail
}  // namespace rv
