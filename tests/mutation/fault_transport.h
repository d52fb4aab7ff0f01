// A fault-injecting Transport for the mutation matrix (issue 10, part 3): it wraps a real
// transport and, once per armed span (one case under one contract), corrupts what one call
// of one operation moves, the way a broken wire, NIC or library could. Test-only: it is
// built into tests/mutation and nothing else.
//
// A "piece" is what one peer contributes to a call:
//   - all_gather and exchange: the block from peer p in the receiver's buffer. The victim
//     rank's own view is corrupted after the real call returns (receiver side).
//   - library_sum and all_reduce_int64: the W chunks of the buffer a ring reduce-scatter
//     hands to the W ranks (shard_plan(n, W)). The victim rank's contribution is corrupted
//     before the real call, so every rank receives the same wrong reduction, as when a
//     chunk goes wrong inside the library before it fans out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/transport/transport.h"

namespace rv::test {

enum class Mutant {
  kDrop,       // a piece never lands: the buffer keeps what it held (a contribution: zeros)
  kDuplicate,  // a piece lands twice: also in the place of a second piece
  kStale,      // a piece carries what it carried at the same call of the previous span
  kSwap,       // two pieces land in each other's places
  kFlipBit,    // one bit of a piece's first element flips (the exponent's top bit, or bit 62)
  kTruncate,   // the last piece arrives short: its second half keeps what the buffer held
  kReorder,    // the pieces land rotated by one place
};
inline constexpr Mutant kAllMutants[] = {Mutant::kDrop,   Mutant::kDuplicate, Mutant::kStale,
                                         Mutant::kSwap,   Mutant::kFlipBit,   Mutant::kTruncate,
                                         Mutant::kReorder};
std::string to_string(Mutant mutant);
// Swap and reorder move right bytes to wrong places; the others change the bytes themselves.
bool is_corruption(Mutant mutant);

// Which call of a span the mutant hits: an operation and its index among that operation's
// calls in the span.
enum class Site {
  kAgreement,   // all_gather #1: the agreement record every case starts with
  kScatter,     // exchange #1: every rank's addends to their owner (fixed-order, exact)
  kDistribute,  // exchange #2: each owner's reduced shard to every rank (fixed-order, exact)
  kWindowMax,   // all_reduce_int64 #1, max: the exact contract's block windows (digits)
  kDigitSum,    // all_reduce_int64 #2, sum: the exact contract's digits (digits)
  kLibrarySum,  // library_sum #1 (library-sum)
};
inline constexpr Site kAllSites[] = {Site::kAgreement, Site::kScatter,  Site::kDistribute,
                                     Site::kWindowMax, Site::kDigitSum, Site::kLibrarySum};
std::string to_string(Site site);
// The operation a site is a call of, as the Transport interface names it.
std::string operation_of(Site site);

struct FaultPlan {
  Mutant mutant = Mutant::kDrop;
  Site site = Site::kAgreement;
  std::uint32_t victim = 0;  // the rank whose view (receiver side) or contribution is corrupted
};

// What outlives one world, per rank: the right bytes each site carried in the last span that
// reached it (the stale mutant delivers them).
struct FaultMemory {
  std::map<Site, std::vector<unsigned char>> last;
};

// What a span did at its site on this rank.
struct FaultHit {
  bool reached = false;  // the site's call happened
  bool fired = false;    // this rank is the victim and the mutant applied (enough pieces)
  bool changed = false;  // what arrived differs from the right bytes (an all-reduce: its result)
  std::string what;      // e.g. "rank 3: peer 0's block dropped (2048 bytes)"
};

class FaultyTransport final : public Transport {
 public:
  FaultyTransport(Transport& inner, const FaultPlan& plan, FaultMemory& memory);

  // Starts a span: call counts restart; `mutate` says whether the mutant may fire in it (a
  // span that does not mutate still records what its site carried, for kStale).
  void begin_span(bool mutate);
  const FaultHit& hit() const { return hit_; }

  std::uint32_t rank() const override { return inner_.rank(); }
  std::uint32_t world_size() const override { return inner_.world_size(); }
  std::string name() const override { return inner_.name() + "+faults"; }
  std::string library_version() const override { return inner_.library_version(); }

  void all_gather(const void* in, void* out, std::size_t bytes) override;
  void exchange(const ExchangePlan& plan) override;
  void broadcast(void* buf, std::size_t bytes, std::uint32_t root) override {
    inner_.broadcast(buf, bytes, root);
  }
  void barrier() override { inner_.barrier(); }
  void library_sum(float* values, std::size_t n) override;
  // Half-precision sums pass through unfaulted: the matrix's sites are the binary32 ones.
  void library_sum_half(void* values, std::size_t n, DType dtype) override {
    inner_.library_sum_half(values, n, dtype);
  }
  std::optional<std::string> library_sum_unavailable(DType dtype) const override {
    return inner_.library_sum_unavailable(dtype);
  }
  std::int64_t max_int(std::int64_t value) override { return inner_.max_int(value); }
  void all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) override;

 private:
  // One peer's piece of a buffer, in bytes from the buffer's start.
  struct Piece {
    std::uint32_t peer = 0;
    std::size_t offset = 0;
    std::size_t bytes = 0;
  };
  // The chunks a ring reduce-scatter hands to the W ranks: shard_plan(n, W), the non-empty.
  std::vector<Piece> chunks_of(std::size_t n, std::size_t element) const;
  // Counts this call of `operation`; true if it is the site's call.
  bool at_site(const std::string& operation);
  // Receiver side: `call` fills `bytes` bytes at `base`; then the victim's view is corrupted.
  void on_receive(const std::function<void()>& call, unsigned char* base, std::size_t bytes,
                  const std::vector<Piece>& pieces);
  // Contribution side: the victim's `bytes` bytes at `base` are corrupted before
  // call(base) reduces them in place.
  void on_contribute(const std::function<void(unsigned char*)>& call, unsigned char* base,
                     std::size_t bytes, const std::vector<Piece>& pieces, std::size_t element);
  // Applies the mutant; returns what it did, or "" where it cannot (too few pieces, no
  // previous span for kStale).
  std::string apply(unsigned char* now, const unsigned char* before,
                    const std::vector<unsigned char>& stale, const std::vector<Piece>& pieces,
                    std::size_t element, bool chunks) const;

  Transport& inner_;
  const FaultPlan plan_;
  FaultMemory& memory_;
  bool mutate_ = false;
  std::map<std::string, int> calls_;  // per operation, in this span
  FaultHit hit_;
};

}  // namespace rv::test
