#include "core/transport/gloo/peer_transfers.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <memory>
#include <sstream>

#include "core/error.h"

namespace rv {
namespace gloo_detail {
namespace {

using Buffer = std::unique_ptr<::gloo::transport::UnboundBuffer>;

struct PeerFailure {
  std::uint32_t peer = 0;
  bool deadline = false;
  std::string what;
};

// Gloo's own wait throws "Timed out waiting …" when the time runs out; a pair error
// ("Connection closed by peer …", "Read error …") can arrive at any time.
bool is_timeout(const std::string& text, const Deadline& deadline) {
  return deadline.passed() || text.find("Timed out") != std::string::npos;
}

class Round {
 public:
  Round(::gloo::Context& context, const std::vector<PeerBytes>& peers, const Deadline& deadline)
      : context_(context),
        peers_(peers),
        deadline_(deadline),
        world_(static_cast<std::uint32_t>(context.size)),
        rank_(static_cast<std::uint32_t>(context.rank)),
        recv_(world_),
        send_(world_),
        failed_(world_, false) {}

  void post(std::uint64_t slot) {
    // Receives first, so no peer's data waits on a missing buffer of ours.
    for_each_peer([&](std::uint32_t p) {
      const PeerBytes& bytes = peers_[p];
      if (bytes.recv_bytes == 0) return;
      try {
        recv_[p] = context_.createUnboundBuffer(bytes.recv, bytes.recv_bytes);
        recv_[p]->recv(static_cast<int>(p), slot);
      } catch (...) {
        recv_[p].reset();
        record(p, false, "connection lost (" + current_exception_text() + ")");
      }
    });
    for_each_peer([&](std::uint32_t p) {
      const PeerBytes& bytes = peers_[p];
      if (bytes.send_bytes == 0 || failed_[p]) return;
      try {
        // Gloo's buffer type is not const-correct; a send only reads it.
        send_[p] = context_.createUnboundBuffer(const_cast<void*>(bytes.send), bytes.send_bytes);
        send_[p]->send(static_cast<int>(p), slot);
      } catch (...) {
        send_[p].reset();
        record(p, false, "connection lost (" + current_exception_text() + ")");
      }
    });
  }

  // Waits peer by peer. A pair error is recorded and the other peers are still waited for,
  // so live peers get their bytes and do not blame this rank; a timeout ends the round
  // (Gloo has then closed every pair of the context).
  void complete() {
    const std::string limit = format_duration(deadline_.timeout());
    bool timed_out = false;
    for_each_peer([&](std::uint32_t p) {
      if (!timed_out) timed_out = !wait(recv_[p], p, true, "no data within " + limit);
    });
    for_each_peer([&](std::uint32_t p) {
      if (!timed_out)
        timed_out = !wait(send_[p], p, false, "did not take our data within " + limit);
    });
  }

  void throw_if_failed(const std::string& label) const {
    if (failures_.empty()) return;
    std::ostringstream out;
    out << label << ": ";
    for (std::size_t i = 0; i < failures_.size(); ++i) {
      out << (i ? "; " : "") << "rank " << failures_[i].peer << ": " << failures_[i].what;
    }
    if (failures_.front().deadline) throw DeadlineExceeded(out.str());
    throw RuntimeFailure(out.str());
  }

 private:
  template <typename Body>
  void for_each_peer(Body body) {
    // Starting after this rank spreads the first waits over different peers.
    for (std::uint32_t k = 1; k < world_; ++k) body((rank_ + k) % world_);
  }

  void record(std::uint32_t peer, bool deadline, std::string what) {
    failed_[peer] = true;
    failures_.push_back(PeerFailure{peer, deadline, std::move(what)});
  }

  // Returns false when the deadline passed.
  bool wait(const Buffer& buffer, std::uint32_t peer, bool receiving,
            const std::string& timeout_text) {
    if (!buffer || failed_[peer]) return true;
    try {
      const bool done = receiving ? buffer->waitRecv(nullptr, deadline_.remaining())
                                  : buffer->waitSend(nullptr, deadline_.remaining());
      if (!done) record(peer, false, "Gloo aborted the wait");
      return true;
    } catch (...) {
      const std::string text = current_exception_text();
      if (is_timeout(text, deadline_)) {
        record(peer, true, timeout_text + " (peer dead or frozen?)");
        return false;
      }
      record(peer, false, "connection lost (" + text + ")");
      return true;
    }
  }

  ::gloo::Context& context_;
  const std::vector<PeerBytes>& peers_;
  const Deadline& deadline_;
  std::uint32_t world_, rank_;
  std::vector<Buffer> recv_, send_;
  std::vector<bool> failed_;
  std::vector<PeerFailure> failures_;
};

}  // namespace

void transfer_with_peers(::gloo::Context& context, const std::string& label,
                         const std::vector<PeerBytes>& peers, const Deadline& deadline) {
  RV_ENFORCE_EQ(InternalError, peers.size(), static_cast<std::size_t>(context.size),
                "one PeerBytes entry per rank");
  const auto slot = static_cast<std::uint64_t>(context.nextSlot());
  Round round(context, peers, deadline);
  round.post(slot);
  round.complete();
  // The buffers die with `round`; Gloo blocks their destruction until its I/O thread has
  // let go of them, so a failed round leaves no pointer into the caller's memory behind.
  round.throw_if_failed(label);
}

}  // namespace gloo_detail
}  // namespace rv
