#include "core/transport/gloo/member_pair.h"

#include <gloo/transport/tcp/unbound_buffer.h>
#include <unistd.h>

#include <string>

#include "core/error.h"
#include "core/transport/gloo/gloo_failure.h"

namespace rv {
namespace gloo_detail {

MemberPair::MemberPair(::gloo::transport::tcp::Context* context,
                       ::gloo::transport::tcp::Device* device, int rank,
                       std::chrono::milliseconds timeout)
    : ::gloo::transport::tcp::Pair(context, device, rank, timeout) {
  std::lock_guard<std::mutex> lock(m_);
  if (state_ != LISTENING && state_ != CONNECTED) {
    throw InternalError("a Gloo TCP pair in state " + std::to_string(state_) +
                        " after its constructor: the Gloo headers do not match the library");
  }
  // The base constructor listened on a port and registered it with the device's loop. The
  // loop may even have accepted a connection on it already (then fd_ is that socket): either
  // way the socket goes, and the pair waits for adopt().
  if (fd_ != -1) {
    device_->unregisterDescriptor(fd_, this);
    ::close(fd_);
    fd_ = -1;
  }
  state_ = INITIALIZING;
}

void MemberPair::adopt(int fd) {
  std::lock_guard<std::mutex> lock(m_);
  if (state_ != INITIALIZING || fd_ != -1) {
    ::close(fd);
    throw InternalError("gloo pair with rank " + std::to_string(rank_) + " adopted twice");
  }
  fd_ = fd;
  try {
    // Gloo's own last step of a connect: addresses, non-blocking, TCP_NODELAY, timeouts,
    // registration with the loop, CONNECTED.
    handleConnected();
  } catch (...) {
    throw RuntimeFailure("cannot hand the connection of rank " + std::to_string(rank_) +
                         " to Gloo: " + current_exception_text());
  }
}

bool MemberPair::read() {
  // Called on the device's loop thread with m_ held (tcp::Pair::handleReadWrite).
  try {
    return ::gloo::transport::tcp::Pair::read();
  } catch (...) {
    const std::string why = current_exception_text();
    // tcp::Pair::read returns before reading once the pair is closed, and closes it only
    // just before returning, so a throw means the pair is still open.
    if (state_ != CLOSED) {
      if (!refused_a_frame_) {
        refusal_ = "rank " + std::to_string(rank_) + " sent a frame Gloo cannot take (" + why +
                   "): a malformed or mismatched message from a member of the world";
        refused_a_frame_ = true;
      }
      signalException(refusal_);
      // The receive the frame claimed to fill was taken off the pair's queue before Gloo's
      // check failed, so signalException does not reach it: its waiter is woken here (it
      // returns "aborted", and the transfer asks the pair why: refusal()).
      ::gloo::NonOwningPtr<::gloo::transport::tcp::UnboundBuffer> in_flight(rx_.ubuf);
      if (in_flight) in_flight->abortWaitRecv();
    }
    return false;
  }
}

std::string MemberPair::refusal() const { return refused_a_frame_ ? refusal_ : std::string(); }

void MemberPair::throw_if_refused_a_frame() const {
  if (refused_a_frame_) throw RuntimeFailure(refusal_);
}

void MemberPair::send(::gloo::transport::UnboundBuffer* buffer, std::uint64_t slot,
                      std::size_t offset, std::size_t bytes) {
  throw_if_refused_a_frame();
  ::gloo::transport::tcp::Pair::send(buffer, slot, offset, bytes);
}

void MemberPair::recv(::gloo::transport::UnboundBuffer* buffer, std::uint64_t slot,
                      std::size_t offset, std::size_t bytes) {
  throw_if_refused_a_frame();
  ::gloo::transport::tcp::Pair::recv(buffer, slot, offset, bytes);
}

std::unique_ptr<::gloo::transport::Pair>& MemberContext::createPair(int peer) {
  pairs_[peer] = std::make_unique<MemberPair>(this, device_.get(), peer, getTimeout());
  return pairs_[peer];
}

}  // namespace gloo_detail
}  // namespace rv
