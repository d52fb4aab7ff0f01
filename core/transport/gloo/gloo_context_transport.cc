#include "core/transport/gloo/gloo_context_transport.h"

#include <gloo/context.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/transport/gloo/gloo_transport.h"
#include "core/transport/gloo/peer_transfers.h"
#include "core/transport/gloo/size_agreement.h"

namespace rv {
namespace gloo_detail {
namespace {

const char* byte_ptr(const void* p, std::size_t offset) {
  return static_cast<const char*>(p) + offset;
}
char* byte_ptr(void* p, std::size_t offset) { return static_cast<char*>(p) + offset; }

void check_plan_shape(const ExchangePlan& plan, std::uint32_t world) {
  const auto w = static_cast<std::size_t>(world);
  RV_ENFORCE_EQ(InputError, plan.send_offset.size(), w, "exchange plan: one send offset per rank");
  RV_ENFORCE_EQ(InputError, plan.send_bytes.size(), w, "exchange plan: one send count per rank");
  RV_ENFORCE_EQ(InputError, plan.recv_offset.size(), w, "exchange plan: one recv offset per rank");
  RV_ENFORCE_EQ(InputError, plan.recv_bytes.size(), w, "exchange plan: one recv count per rank");
  for (std::size_t p = 0; p < w; ++p) {
    if (plan.send_bytes[p] > 0 && plan.send == nullptr) {
      throw InputError("exchange plan: bytes to send to rank " + std::to_string(p) +
                       " but no send buffer");
    }
    if (plan.recv_bytes[p] > 0 && plan.recv == nullptr) {
      throw InputError("exchange plan: bytes to receive from rank " + std::to_string(p) +
                       " but no receive buffer");
    }
  }
}

// Every rank's `bytes` from `in` into out + rank × bytes.
ExchangePlan all_gather_plan(const void* in, void* out, std::size_t bytes, std::uint32_t world) {
  ExchangePlan plan;
  plan.send = in;
  plan.recv = out;
  plan.send_offset.assign(world, 0);
  plan.send_bytes.assign(world, bytes);
  plan.recv_bytes.assign(world, bytes);
  for (std::uint32_t p = 0; p < world; ++p) plan.recv_offset.push_back(p * bytes);
  return plan;
}

// How much longer a rank waits for a peer to *start* an operation (its header) than for
// the bytes of a peer that has started. A peer that has not started may still be stuck in
// the previous operation waiting on a dead or frozen rank; its own deadline then passes
// first, it closes its connections, and this rank goes on to wait for — and name — the
// rank that really is silent instead of the one that was only waiting.
Deadline header_deadline(const Deadline& deadline) {
  const auto grace = std::min(deadline.timeout() / 4, std::chrono::milliseconds(1000));
  return deadline.extended(grace);
}

}  // namespace

GlooContextTransport::GlooContextTransport(std::shared_ptr<::gloo::Context> context,
                                           std::chrono::milliseconds timeout)
    : context_(std::move(context)),
      rank_(static_cast<std::uint32_t>(context_->rank)),
      world_(static_cast<std::uint32_t>(context_->size)),
      timeout_(timeout),
      row_(2 * static_cast<std::size_t>(world_) + kInlineBytes / sizeof(std::uint64_t)),
      rows_(world_ * row_.size()),
      row_send_(world_),
      row_recv_(world_) {
  const std::size_t row_bytes = row_.size() * sizeof(std::uint64_t);
  for (std::uint32_t p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    row_send_[p] = context_->createUnboundBuffer(row_.data(), row_bytes);
    row_recv_[p] = context_->createUnboundBuffer(&rows_[p * row_.size()], row_bytes);
  }
}

// The context closes its pairs (an orderly close: bytes already written still arrive) and
// joins the device's I/O thread.
GlooContextTransport::~GlooContextTransport() = default;

std::string GlooContextTransport::library_version() const { return gloo_library_version(); }

void GlooContextTransport::refuse_if_failed(const std::string& where) const {
  if (!failure_.empty()) {
    throw RuntimeFailure(where +
                         ": the transport is unusable after an earlier failure: " + failure_);
  }
}

void GlooContextTransport::retire_buffers() {
  retired_.clear();
  retired_.swap(retiring_);
}

std::string GlooContextTransport::label(const char* op) const {
  std::ostringstream out;
  out << "gloo " << op << " on rank " << rank_ << " of " << world_;
  return out.str();
}

void GlooContextTransport::post_header_round(PeerRound& round,
                                             const std::vector<std::uint64_t>& counts,
                                             const void* inline_data, std::size_t inline_bytes) {
  std::fill(row_.begin(), row_.end(), 0);
  std::copy(counts.begin(), counts.end(), row_.begin());
  if (inline_bytes > 0) std::memcpy(&row_[counts.size()], inline_data, inline_bytes);
  std::copy(row_.begin(), row_.end(), rows_.begin() + rank_ * row_.size());
  for (std::uint32_t p : round.peers()) {
    round.post_recv(p, *row_recv_[p]);
    round.post_send(p, *row_send_[p]);
  }
}

const unsigned char* GlooContextTransport::inline_of(std::uint32_t rank) const {
  return reinterpret_cast<const unsigned char*>(&rows_[rank * row_.size() + 2 * world_]);
}

void GlooContextTransport::small_all_gather(const std::string& where, const void* in, void* out,
                                            std::size_t bytes, const Deadline& deadline) {
  PeerRound round(*context_, header_deadline(deadline), retiring_);
  const std::vector<std::size_t> each(world_, bytes);
  post_header_round(round, size_row(each, each), in, bytes);
  round.wait_all();
  round.throw_if_failed(where);
  const std::string disagreement = find_size_disagreement(rows_, world_, row_.size());
  if (!disagreement.empty()) {
    throw InputError(where + ": ranks disagree on byte counts: " + disagreement);
  }
  if (bytes == 0) return;
  for (std::uint32_t p = 0; p < world_; ++p) {
    std::memcpy(static_cast<char*>(out) + p * bytes, inline_of(p), bytes);
  }
}

// Sizes are agreed pair by pair, overlapped with the payload: every rank sends every peer
// its whole row of counts and posts all its payload sends at once; a receive from a peer is
// posted only once that peer's row shows both directions of the pair agree (Gloo moves a
// payload only when the receiver has posted a receive, so it never meets a receive smaller
// than what comes). A rank stuck waiting for one peer's row has thus already offered its
// bytes to all the others, who do not wait on it. Once every row is in, each rank checks
// the whole matrix, so a disagreement anywhere is the same InputError on every rank.
void GlooContextTransport::checked_exchange(const std::string& where, const ExchangePlan& plan,
                                            const Deadline& deadline) {
  check_plan_shape(plan, world_);
  const std::uint32_t me = rank_;
  // Rounds are created in the same order on every rank (counts_agreed is the same promise
  // on every rank), so their slots match.
  std::unique_ptr<PeerRound> counts;
  if (!plan.counts_agreed) {
    counts = std::make_unique<PeerRound>(*context_, header_deadline(deadline), retiring_);
  }
  PeerRound payload(*context_, deadline, retiring_);
  if (counts) {
    const bool value = plan.has_agreed_value;
    post_header_round(*counts, size_row(plan.send_bytes, plan.recv_bytes),
                      value ? &plan.agreed_value : nullptr, value ? sizeof plan.agreed_value : 0);
  }
  post_payload(payload, plan, !counts);
  if (!counts) {
    payload.wait_all();
    payload.throw_if_failed(where);
    return;
  }
  auto receive_from = [&](std::uint32_t p) {
    payload.post_recv(p, byte_ptr(plan.recv, plan.recv_offset[p]), plan.recv_bytes[p]);
  };

  const std::string agreeing = where + " (agreeing on byte counts)";
  std::vector<bool> agreed(world_, false);
  for (std::uint32_t p : counts->peers()) {
    if (!counts->wait_recv(p)) {
      if (counts->timed_out()) break;
      continue;
    }
    agreed[p] = pair_agrees(rows_, world_, me, p, row_.size());
    if (agreed[p]) receive_from(p);
  }
  if (counts->timed_out()) counts->throw_if_failed(agreeing);
  // Receives before sends: Gloo wakes a pending receive when its peer's connection fails,
  // but not a send already handed to the socket, so a dead peer is found on a receive and
  // the sends to it are not waited for. The payload is finished with every peer it was
  // agreed with, even when something else failed, so live peers get their bytes and name
  // the real culprit.
  for (std::uint32_t p : payload.peers()) {
    if (agreed[p]) payload.wait_recv(p);
  }
  for (std::uint32_t p : counts->peers()) {
    if (!payload.peer_failed(p)) counts->wait_send(p);
  }
  if (counts->timed_out()) counts->throw_if_failed(agreeing);
  for (std::uint32_t p : payload.peers()) {
    if (agreed[p] && !counts->peer_failed(p)) payload.wait_send(p);
  }
  counts->throw_if_failed(agreeing);
  payload.throw_if_failed(where);
  if (plan.has_agreed_value) check_agreed_value(where, plan);
  const std::string disagreement = find_size_disagreement(rows_, world_, row_.size());
  if (!disagreement.empty()) {
    throw InputError(where + ": ranks disagree on byte counts: " + disagreement);
  }
}

void GlooContextTransport::check_agreed_value(const std::string& where,
                                             const ExchangePlan& plan) const {
  std::vector<std::uint64_t> values(world_);
  for (std::uint32_t p = 0; p < world_; ++p) {
    std::memcpy(&values[p], inline_of(p), sizeof values[p]);
  }
  if (std::all_of(values.begin(), values.end(), [&](auto v) { return v == values[0]; })) return;
  std::ostringstream out;
  out << where << ": ranks disagree on " << plan.agreed_value_name << ":";
  for (std::uint32_t p = 0; p < world_; ++p) {
    out << (p ? "," : "") << " rank " << p << " has " << values[p];
  }
  throw InputError(out.str());
}

void GlooContextTransport::post_payload(PeerRound& payload, const ExchangePlan& plan,
                                        bool receive) {
  for (std::uint32_t p : payload.peers()) {
    payload.post_send(p, byte_ptr(plan.send, plan.send_offset[p]), plan.send_bytes[p]);
  }
  // The local copy runs while Gloo's I/O thread moves the peers' bytes.
  const std::uint32_t me = rank_;
  if (plan.send_bytes[me] > 0 && plan.send_bytes[me] == plan.recv_bytes[me]) {
    std::memmove(byte_ptr(plan.recv, plan.recv_offset[me]),
                 byte_ptr(plan.send, plan.send_offset[me]), plan.send_bytes[me]);
  }
  if (!receive) return;
  for (std::uint32_t p : payload.peers()) {
    payload.post_recv(p, byte_ptr(plan.recv, plan.recv_offset[p]), plan.recv_bytes[p]);
  }
}

// An exchange whose counts are agreed, in flight: its round holds every posted transfer.
// Waited, it finishes like checked_exchange; abandoned (destroyed unwaited, an exception
// unwinding the caller), its buffers die with it and the transport is marked unusable, since
// peers may still be sending into a round nobody receives.
//
// Blame. With several rounds in flight, a round may fail only because a peer closed its
// connections, which a peer does when its own deadline passed waiting on a third rank: the
// silent one. That rank would be named by one of this rank's other rounds, which have not
// been waited for yet. So before a round that saw only closed connections throws, the other
// rounds in flight are waited out (each within its own deadline, which began before this
// one's) and their failures are named too.
class GlooContextTransport::Pending final : public PendingExchange {
 public:
  Pending(GlooContextTransport& owner, std::string where, std::unique_ptr<PeerRound> round)
      : owner_(owner), where_(std::move(where)), round_(std::move(round)) {
    owner_.in_flight_.push_back(this);
  }
  ~Pending() override {
    auto& in_flight = owner_.in_flight_;
    in_flight.erase(std::remove(in_flight.begin(), in_flight.end(), this), in_flight.end());
    if (!waited_ && owner_.failure_.empty()) {
      owner_.failure_ = where_ + ": abandoned before it completed";
    }
  }
  void wait() override {
    waited_ = true;
    owner_.guarded(where_, [&] {
      round_->wait_all();
      if (round_->failed() && !round_->timed_out()) {
        for (Pending* other : owner_.in_flight_) {
          if (other == this || other->waited_) continue;
          other->round_->wait_all();
          round_->add_failures_of(*other->round_);
        }
      }
      round_->throw_if_failed(where_);
    });
  }

 private:
  GlooContextTransport& owner_;
  std::string where_;
  std::unique_ptr<PeerRound> round_;
  bool waited_ = false;
};

std::unique_ptr<PendingExchange> GlooContextTransport::start_exchange(const ExchangePlan& plan) {
  if (!plan.counts_agreed) return Transport::start_exchange(plan);
  std::unique_ptr<PendingExchange> pending;
  run("exchange", [&](const std::string& where, const Deadline& deadline) {
    check_plan_shape(plan, world_);
    auto round = std::make_unique<PeerRound>(*context_, deadline, retiring_);
    post_payload(*round, plan, true);
    pending = std::make_unique<Pending>(*this, where, std::move(round));
  });
  return pending;
}

void GlooContextTransport::all_gather(const void* in, void* out, std::size_t bytes) {
  run("all_gather", [&](const std::string& where, const Deadline& deadline) {
    // Every rank takes the path of its own size; a rank with another size still meets the
    // others in the same header round, where the counts disagree for all of them.
    if (bytes <= kInlineBytes) {
      small_all_gather(where, in, out, bytes, deadline);
    } else {
      checked_exchange(where, all_gather_plan(in, out, bytes, world_), deadline);
    }
  });
}

void GlooContextTransport::exchange(const ExchangePlan& plan) {
  run("exchange", [&](const std::string& where, const Deadline& deadline) {
    checked_exchange(where, plan, deadline);
  });
}

void GlooContextTransport::broadcast(void* buf, std::size_t bytes, std::uint32_t root) {
  run("broadcast", [&](const std::string& where, const Deadline& deadline) {
    RV_ENFORCE_LT(InputError, root, world_, where + ": broadcast root out of range");
    // A star from the root: every receiver waits on the root itself, so a failure names it.
    ExchangePlan plan;
    plan.send = buf;
    plan.recv = buf;
    plan.send_offset.assign(world_, 0);
    plan.recv_offset.assign(world_, 0);
    plan.send_bytes.assign(world_, 0);
    plan.recv_bytes.assign(world_, 0);
    if (rank_ == root) {
      for (std::uint32_t p = 0; p < world_; ++p) {
        if (p != root) plan.send_bytes[p] = bytes;
      }
    } else {
      plan.recv_bytes[root] = bytes;
    }
    checked_exchange(where, plan, deadline);
  });
}

// The header round alone is a barrier: no rank leaves it before it has heard from every
// other rank.
void GlooContextTransport::barrier() {
  run("barrier", [&](const std::string& where, const Deadline& deadline) {
    small_all_gather(where, nullptr, nullptr, 0, deadline);
  });
}

}  // namespace gloo_detail
}  // namespace rv
