// The one interface every live transport implements: it moves bytes between the ranks of a
// world and knows nothing of contracts. The fixed-order reducer sees only this; the
// library-sum contract asks the library for its own float sum through `library_sum`.
//
// Memory: a host transport (gloo) takes host pointers; a device transport (nccl) takes
// device pointers of its rank's GPU. Every call is collective: all ranks of the world make
// the same calls in the same order with the same sizes (the caller agrees on sizes first,
// see agree_across_ranks in core/reducer). Every call has a deadline; a dead or frozen
// peer becomes a DeadlineExceeded or RuntimeFailure naming the peer where the library can
// tell, and the transport is unusable afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/int_reduction.h"

namespace rv {

// One rank's side of a pairwise exchange (an all-to-all with per-peer sizes): for every
// peer p, send_bytes[p] bytes from send + send_offset[p] go to p, and recv_bytes[p] bytes
// from p land at recv + recv_offset[p]. The entry for this rank itself is a local copy.
// Zero-byte entries move nothing.
struct ExchangePlan {
  const void* send = nullptr;
  std::vector<std::size_t> send_offset, send_bytes;
  void* recv = nullptr;
  std::vector<std::size_t> recv_offset, recv_bytes;
  // Set only when every count follows from counts already checked across the ranks (the
  // fixed-order reducer's second exchange: its sizes are implied by the first one's): the
  // transport may then skip its own agreement round. A false promise can abort the process
  // inside the library (Gloo), so leave it off when in doubt.
  bool counts_agreed = false;
  // Only with counts_agreed false: a number every rank must give alike (the fixed-order
  // reducer's arena length), checked with the counts, so the first exchange of a reduction
  // is also its agreement and no round of its own is needed. A disagreement is an InputError
  // on every rank naming what each rank gave, under `agreed_value_name`.
  bool has_agreed_value = false;
  std::uint64_t agreed_value = 0;
  const char* agreed_value_name = "value";
};

// An exchange in flight (Transport::start_exchange).
class PendingExchange {
 public:
  virtual ~PendingExchange() = default;
  // Returns once this rank's receives have landed and its sends have left (the plan's buffers
  // are the caller's again); throws what exchange would have thrown. Call it once. A pending
  // exchange destroyed unwaited (an exception unwinding the caller) abandons its transfers,
  // and the transport is unusable afterwards.
  virtual void wait() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::uint32_t rank() const = 0;
  virtual std::uint32_t world_size() const = 0;
  // "gloo", "nccl", "cuda-loopback"
  virtual std::string name() const = 0;
  // e.g. "Gloo (Debian 0.0~git20220518.5b14351)", "NCCL 2.28.9 (/path/libnccl.so.2)"
  virtual std::string library_version() const = 0;

  // in: `bytes` bytes of this rank; out: world × bytes, rank r's block at r × bytes. Host
  // memory is accepted by every transport here (a device transport stages it), since the
  // agreement records that precede every collective live on the host.
  virtual void all_gather(const void* in, void* out, std::size_t bytes) = 0;
  // Pure byte movement, per ExchangePlan.
  virtual void exchange(const ExchangePlan& plan) = 0;
  // The same exchange, started: returns while the bytes move, so the caller can work
  // meanwhile (the fixed-order reducer folds piece k under the transfer of piece k + 1).
  // Ranks start and wait their exchanges in the same order; several may be in flight. The
  // default runs exchange(plan) before returning; a transport that can do better overrides.
  virtual std::unique_ptr<PendingExchange> start_exchange(const ExchangePlan& plan);
  // `bytes` bytes from root's buf into every rank's buf.
  virtual void broadcast(void* buf, std::size_t bytes, std::uint32_t root) = 0;
  virtual void barrier() = 0;
  // The library's own sum all-reduce of n binary32 values, in place (the library-sum
  // contract; the mean scale and the NaN rule are applied by the caller).
  virtual void library_sum(float* values, std::size_t n) = 0;
  // The library's own sum all-reduce of n half-precision values of `dtype` (bf16 or f16, the
  // format's raw 2-byte elements), in place (docs/DESIGN.md §2.5). A transport whose library
  // has no such sum refuses with InputError naming itself and the dtype, on every rank alike
  // and before anything is sent: nothing is summed another way.
  virtual void library_sum_half(void* values, std::size_t n, DType dtype) {
    (void)values;
    (void)n;
    throw InputError(library_sum_unavailable(dtype).value_or(name() + ": no library sum"));
  }
  // Why this transport's library cannot sum `dtype` (nullopt: it can; binary32 it always
  // can). `run` asks before a case, so a library-sum case of such a dtype is skipped with
  // this reason rather than failed; library_sum_half refuses with it.
  virtual std::optional<std::string> library_sum_unavailable(DType dtype) const {
    if (dtype == DType::kF32) return std::nullopt;
    return name() + " has no library sum of " + std::string(to_string(dtype));
  }
  // The library's own reduce-scatter (sum) of W × shard_size elements of `dtype` (binary32,
  // or a half format's raw 2-byte elements), in place: afterwards this rank's reduced shard
  // is elements [rank × shard_size, (rank + 1) × shard_size) of `values` (the in-place layout
  // of ncclReduceScatter); the rest is undefined. The library-sum contract's reduce-scatter
  // (docs/DESIGN.md §2.6). The caller has agreed on shard_size across the ranks. A transport
  // whose library has none refuses with InputError naming itself, before anything is sent.
  virtual void library_reduce_scatter(void* values, std::size_t shard_size, DType dtype) {
    (void)values;
    (void)shard_size;
    throw InputError(library_reduce_scatter_unavailable(dtype).value_or(
        name() + ": no library reduce-scatter"));
  }
  // Why this transport's library has no reduce-scatter of `dtype` (nullopt: it has one).
  virtual std::optional<std::string> library_reduce_scatter_unavailable(DType dtype) const {
    return name() + " has no library reduce-scatter of " + std::string(to_string(dtype));
  }
  // The maximum over ranks of one integer (for any(flag): exact and order-independent).
  virtual std::int64_t max_int(std::int64_t value) = 0;
  // The library's own all-reduce of n int64 values, in place (ncclAllReduce ncclInt64,
  // Gloo's allreduce of int64_t). The caller keeps every partial sum inside int64: the
  // transport does not check for overflow. Ranks must pass the same n; a transport whose
  // library cannot survive a mismatch checks n across the ranks first (Gloo: one more round).
  virtual void all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) = 0;
  // The same, for a caller whose n follows from values already checked across the ranks
  // (ExchangePlan::counts_agreed for the all-reduce; the exact reducer's sizes all follow
  // from its agreed n and the words of its max all-reduce): the transport may skip its own
  // check of n. A false promise can abort the process inside the library (Gloo), so call
  // all_reduce_int64 when in doubt. By default it is all_reduce_int64.
  virtual void all_reduce_int64_counts_agreed(std::int64_t* values, std::size_t n,
                                              IntReduction op) {
    all_reduce_int64(values, n, op);
  }
};

// The default start_exchange: the exchange is over when it returns.
inline std::unique_ptr<PendingExchange> Transport::start_exchange(const ExchangePlan& plan) {
  struct Finished final : PendingExchange {
    void wait() override {}
  };
  exchange(plan);
  return std::make_unique<Finished>();
}

}  // namespace rv
