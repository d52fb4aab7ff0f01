// The TCP connections of a pair mesh, made by us and authenticated before Gloo sees them
// (docs/DESIGN.md §10). Gloo's tcp::Pair listens on a port of its own and takes the first
// connection that arrives, whoever makes it, and then parses its bytes as Gloo frames: a
// stranger who connects first is the peer (and the real peer is refused), and a crafted
// header aborts the process. Here each rank listens once, on a port of its own; the higher
// rank of every pair dials the lower one, and both prove they hold the job's secret
// (core/transport/membership/handshake_frames.h) before the socket is handed to Gloo
// (member_pair.h). A connection that does not prove it is dropped and counted, never fatal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/deadline.h"
#include "core/transport/gloo/socket_address.h"
#include "core/transport/membership/membership_secret.h"

namespace rv {
namespace gloo_detail {

// How long a connection may take to prove membership once accepted, and how many may be
// unproven at once (the oldest is dropped beyond that): a member proves itself within one
// round trip, so a stranger holding sockets open costs the listener little. A member whose
// connection was dropped dials again.
inline constexpr std::chrono::milliseconds kHandshakeLimit{2000};
inline constexpr std::size_t kMaxUnproven = 64;

class MemberListener {
 public:
  // Listens on `bind` (port 0: the kernel picks one). Throws RuntimeFailure.
  explicit MemberListener(const SocketAddress& bind);
  ~MemberListener();
  MemberListener(const MemberListener&) = delete;
  MemberListener& operator=(const MemberListener&) = delete;

  // The address (with its port) the higher ranks dial.
  const SocketAddress& address() const { return address_; }

  // Starts accepting ranks me+1 .. world-1, who must prove they hold `secret`. Before this,
  // connections wait in the kernel's backlog.
  void start(const membership::Secret& secret, std::uint32_t me, std::uint32_t world);

  // Waits until every expected rank has connected, or the deadline; then stops listening.
  // The sockets by rank (-1 for a rank that did not connect in time, and for ranks not
  // expected); the caller owns them.
  std::vector<int> wait_for_members(const Deadline& deadline);

  // Connections dropped for not proving membership, and what the first one did.
  std::uint64_t refused() const;
  std::string first_refusal() const;

 private:
  struct Unproven;
  void run();
  // Reads what `u` sent and answers it; false once it is done with (accepted: its socket
  // moved to members_; refused: counted).
  bool serve(Unproven& u);
  void refuse(const std::string& peer, const std::string& why);

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  SocketAddress address_;
  membership::Secret secret_{};
  std::uint32_t me_ = 0, world_ = 1;
  std::thread thread_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int> members_;  // by rank
  std::uint32_t missing_ = 0;
  bool finished_ = false;  // the accepting thread has ended
  std::uint64_t refused_ = 0;
  std::string first_refusal_;
};

// Dials rank `to`'s listener at `peer` as rank `from` of `world`, and proves membership both
// ways. Returns the connected socket, ready for Gloo. A connection the listener drops before
// accepting is dialled again until the deadline. Throws DeadlineExceeded when the deadline
// passes, RuntimeFailure when the address refuses connections or what answers there cannot
// prove it is rank `to` of this job.
int dial_member(const SocketAddress& peer, std::uint32_t from, std::uint32_t to,
                std::uint32_t world, const membership::Secret& secret, const Deadline& deadline);

}  // namespace gloo_detail
}  // namespace rv
