#include "core/transport/gloo/peer_transfers.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <sstream>

#include "core/error.h"
#include "core/transport/gloo/gloo_failure.h"
#include "core/transport/gloo/member_pair.h"

namespace rv {
namespace gloo_detail {
namespace {

// Gloo's own wait throws "Timed out waiting …" when the time runs out; a pair error
// ("Connection closed by peer …", "Read error …") can arrive at any time, also just after
// the deadline (a peer that gave up on a third rank closes its connections), and then it
// is a closed connection, not a silent peer.
bool is_timeout(const std::string& text) { return text.find("Timed out") != std::string::npos; }

}  // namespace

PeerRound::PeerRound(::gloo::Context& context, const Deadline& deadline,
                     std::vector<UnboundBufferPtr>& retired)
    : context_(context),
      deadline_(deadline),
      retired_(retired),
      slot_(static_cast<std::uint64_t>(context.nextSlot())),
      world_(static_cast<std::uint32_t>(context.size)),
      rank_(static_cast<std::uint32_t>(context.rank)),
      recv_(world_),
      send_(world_),
      failed_(world_, false) {}

PeerRound::~PeerRound() = default;

std::vector<std::uint32_t> PeerRound::peers() const {
  std::vector<std::uint32_t> order;
  for (std::uint32_t k = 1; k < world_; ++k) order.push_back((rank_ + k) % world_);
  return order;
}

void PeerRound::record(std::uint32_t peer, bool deadline, std::string what) {
  failed_[peer] = true;
  failures_.push_back(Failure{peer, deadline, std::move(what)});
}

void PeerRound::post(Posted& posted, std::uint32_t peer, bool receiving) {
  try {
    if (receiving) {
      posted.buffer->recv(static_cast<int>(peer), slot_);
    } else {
      posted.buffer->send(static_cast<int>(peer), slot_);
    }
  } catch (...) {
    posted = Posted{};
    record(peer, false, "connection lost (" + current_exception_text() + ")");
  }
}

void PeerRound::post_recv(std::uint32_t peer, void* data, std::size_t bytes) {
  if (bytes == 0 || failed_[peer]) return;
  Posted& posted = recv_[peer];
  posted.owned = context_.createUnboundBuffer(data, bytes);
  posted.buffer = posted.owned.get();
  post(posted, peer, true);
}

void PeerRound::post_send(std::uint32_t peer, const void* data, std::size_t bytes) {
  if (bytes == 0 || failed_[peer]) return;
  Posted& posted = send_[peer];
  // Gloo's buffer type is not const-correct; a send only reads it.
  posted.owned = context_.createUnboundBuffer(const_cast<void*>(data), bytes);
  posted.buffer = posted.owned.get();
  post(posted, peer, false);
}

void PeerRound::post_recv(std::uint32_t peer, ::gloo::transport::UnboundBuffer& kept) {
  if (kept.size == 0 || failed_[peer]) return;
  recv_[peer].buffer = &kept;
  post(recv_[peer], peer, true);
}

void PeerRound::post_send(std::uint32_t peer, ::gloo::transport::UnboundBuffer& kept) {
  if (kept.size == 0 || failed_[peer]) return;
  send_[peer].buffer = &kept;
  post(send_[peer], peer, false);
}

bool PeerRound::wait(Posted& posted, std::uint32_t peer, bool receiving) {
  if (failed_[peer]) return false;
  if (posted.buffer == nullptr) return true;
  if (timed_out_) return false;
  try {
    const bool done = receiving ? posted.buffer->waitRecv(nullptr, deadline_.remaining())
                                : posted.buffer->waitSend(nullptr, deadline_.remaining());
    if (!done) {
      const auto* pair =
          dynamic_cast<const MemberPair*>(context_.getPair(static_cast<int>(peer)).get());
      const std::string why = pair == nullptr ? std::string() : pair->refusal();
      record(peer, false, why.empty() ? "Gloo aborted the wait" : why);
      return false;
    }
    if (posted.owned) retired_.push_back(std::move(posted.owned));
    posted = Posted{};
    return true;
  } catch (...) {
    const std::string text = current_exception_text();
    if (is_timeout(text)) {
      timed_out_ = true;
      const std::string limit = format_duration(deadline_.timeout());
      record(peer, true,
             (receiving ? "no data within " : "did not take our data within ") + limit +
                 " (peer dead or frozen?)");
    } else {
      record(peer, false, "connection lost (" + text + ")");
    }
    return false;
  }
}

bool PeerRound::wait_recv(std::uint32_t peer) { return wait(recv_[peer], peer, true); }
bool PeerRound::wait_send(std::uint32_t peer) { return wait(send_[peer], peer, false); }

// A pair error is recorded and the other peers are still waited for, so live peers get
// their bytes and do not blame this rank; after a timeout the remaining waits end at once.
// Receives first: Gloo wakes a pending receive when its peer's connection fails, but not a
// send it has already queued on the socket.
void PeerRound::wait_all() {
  for (std::uint32_t p : peers()) wait_recv(p);
  for (std::uint32_t p : peers()) wait_send(p);
}

void PeerRound::add_failures_of(const PeerRound& other) {
  for (const Failure& f : other.failures_) record(f.peer, f.deadline, f.what);
  timed_out_ = timed_out_ || other.timed_out_;
}

void PeerRound::throw_if_failed(const std::string& label) const {
  if (failures_.empty()) return;
  std::ostringstream out;
  out << label << ": ";
  for (std::size_t i = 0; i < failures_.size(); ++i) {
    out << (i ? "; " : "") << "rank " << failures_[i].peer << ": " << failures_[i].what;
  }
  // A silent peer is the likelier cause: a peer that closed its connections may have done so
  // because it timed out on the same silent rank.
  for (const Failure& f : failures_) {
    if (f.deadline) throw DeadlineExceeded(out.str());
  }
  throw RuntimeFailure(out.str());
}

}  // namespace gloo_detail
}  // namespace rv
