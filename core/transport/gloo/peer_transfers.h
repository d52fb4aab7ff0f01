// Rounds of point-to-point transfers between this rank and its peers, over Gloo's unbound
// buffers (the only Gloo API this backend uses for its own traffic: the old bound-buffer
// algorithms resize the sockets' send buffers and slow all later traffic on the pairs:
// docs/results.md, "Decisions behind the code").
//
// Each transfer has its own buffer, and each wait is for one peer within the operation's
// deadline. That is what lets a failure name the peer: the buffer that did not complete
// belongs to exactly one rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/deadline.h"

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo

namespace rv {
namespace gloo_detail {

using UnboundBufferPtr = std::unique_ptr<::gloo::transport::UnboundBuffer>;

// One round on one Gloo slot: at most one receive from and one send to each peer. All ranks
// create their rounds in the same order (each takes the context's next slot).
//
// Buffer lifetimes. Gloo blocks a buffer's destruction until its I/O thread has let go of
// it, by spinning on sched_yield. Destroyed right after its completion woke us, a buffer
// usually still is in the I/O thread's hands, and on a box with fewer cores than threads
// the spin costs a scheduler tick per operation (docs/results.md). So a
// completed buffer is handed to `retired`, which the owner clears at its next operation
// (a completed buffer never touches the caller's memory again); a buffer that did not
// complete dies with the round, so a failed round leaves no pointer into that memory.
class PeerRound {
 public:
  PeerRound(::gloo::Context& context, const Deadline& deadline,
            std::vector<UnboundBufferPtr>& retired);
  ~PeerRound();
  PeerRound(const PeerRound&) = delete;
  PeerRound& operator=(const PeerRound&) = delete;

  // Zero bytes post nothing. A peer whose connection already failed is recorded, not thrown.
  void post_recv(std::uint32_t peer, void* data, std::size_t bytes);
  void post_send(std::uint32_t peer, const void* data, std::size_t bytes);
  // The same on a buffer the caller keeps for many rounds (its whole extent).
  void post_recv(std::uint32_t peer, ::gloo::transport::UnboundBuffer& kept);
  void post_send(std::uint32_t peer, ::gloo::transport::UnboundBuffer& kept);

  // Wait for what was posted for one peer (nothing posted: true at once). False when it
  // failed (recorded: a pair error, or the deadline, after which Gloo has closed every pair
  // of the context and every later wait returns false at once).
  bool wait_recv(std::uint32_t peer);
  bool wait_send(std::uint32_t peer);
  // Every posted receive, then every posted send, peer by peer from rank + 1 on.
  void wait_all();

  bool failed() const { return !failures_.empty(); }
  // Adds another round's failures to this one's (after its own), so one error can tell a
  // peer that only closed its connections from the peer that went silent first.
  void add_failures_of(const PeerRound& other);
  bool timed_out() const { return timed_out_; }
  bool peer_failed(std::uint32_t peer) const { return failed_[peer]; }
  // DeadlineExceeded when a peer let the deadline pass, else RuntimeFailure; the message
  // starts with `label` and names every failing peer in the order found, e.g.
  //   "gloo exchange on rank 0 of 4: rank 3: no data within 10 s (peer dead or frozen?)".
  void throw_if_failed(const std::string& label) const;

  std::uint32_t world() const { return world_; }
  std::uint32_t rank() const { return rank_; }
  // The peers in the order this rank serves them: rank + 1, rank + 2, … (spreads the first
  // waits of the ranks over different peers).
  std::vector<std::uint32_t> peers() const;

 private:
  // A posted transfer: the buffer it runs on, and that buffer itself if this round made it.
  struct Posted {
    ::gloo::transport::UnboundBuffer* buffer = nullptr;
    UnboundBufferPtr owned;
  };
  struct Failure {
    std::uint32_t peer;
    bool deadline;
    std::string what;
  };
  void record(std::uint32_t peer, bool deadline, std::string what);
  void post(Posted& posted, std::uint32_t peer, bool receiving);
  bool wait(Posted& posted, std::uint32_t peer, bool receiving);

  ::gloo::Context& context_;
  Deadline deadline_;
  std::vector<UnboundBufferPtr>& retired_;
  std::uint64_t slot_;
  std::uint32_t world_, rank_;
  std::vector<Posted> recv_, send_;
  std::vector<bool> failed_;
  std::vector<Failure> failures_;
  bool timed_out_ = false;
};

}  // namespace gloo_detail
}  // namespace rv
