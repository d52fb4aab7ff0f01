#include "core/transport/gloo/member_connections.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>

#include "core/error.h"
#include "core/transport/membership/handshake_frames.h"

namespace rv {
namespace gloo_detail {
namespace {

using Clock = std::chrono::steady_clock;
using membership::Frame;
using membership::ListenerHandshake;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

std::string peer_text(int fd) {
  SocketAddress address;
  address.length = sizeof address.storage;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    return "an unknown address";
  }
  return address.text();
}

// Sends all of a small frame on a non-blocking socket whose buffer is empty; false if the
// kernel did not take it whole at once (a peer that reads nothing) or the socket failed.
bool send_whole(int fd, const Frame& frame) {
  const ssize_t n = ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return n == static_cast<ssize_t>(frame.size());
}

// Waits for `events` on fd until the deadline: false when it passed.
bool wait_for(int fd, short events, const Deadline& deadline) {
  for (;;) {
    const auto left = deadline.remaining().count();
    pollfd p{fd, events, 0};
    const int rv = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (rv > 0) return true;
    if (rv < 0 && errno != EINTR) return true;  // the next call on fd reports it
    if (deadline.passed()) return false;
  }
}

enum class Io { kDone, kClosed, kTimeout };

Io read_exactly(int fd, unsigned char* bytes, std::size_t size, const Deadline& deadline) {
  std::size_t done = 0;
  while (done < size) {
    if (!wait_for(fd, POLLIN, deadline)) return Io::kTimeout;
    const ssize_t n = ::recv(fd, bytes + done, size - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      return Io::kClosed;
    }
  }
  return Io::kDone;
}

Io write_exactly(int fd, const Frame& frame, const Deadline& deadline) {
  std::size_t done = 0;
  while (done < frame.size()) {
    if (!wait_for(fd, POLLOUT, deadline)) return Io::kTimeout;
    const ssize_t n =
        ::send(fd, frame.data() + done, frame.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return Io::kClosed;
    }
  }
  return Io::kDone;
}

}  // namespace

// One accepted connection that has not yet proven membership.
struct MemberListener::Unproven {
  int fd = -1;
  Clock::time_point since;
  std::string peer;
  ListenerHandshake handshake;
};

MemberListener::MemberListener(const SocketAddress& bind) {
  listen_fd_ = ::socket(bind.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw RuntimeFailure(errno_text("socket"));
  SocketAddress any_port = bind;
  any_port.set_port(0);
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&any_port.storage), any_port.length) !=
          0 ||
      ::listen(listen_fd_, SOMAXCONN) != 0 || ::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int error = errno;
    ::close(listen_fd_);
    throw RuntimeFailure("cannot listen on " + any_port.ip() + ": " + std::strerror(error));
  }
  address_ = bound_address(listen_fd_);
}

MemberListener::~MemberListener() {
  if (thread_.joinable()) {
    const char stop = 's';
    (void)!::write(wake_[1], &stop, 1);
    thread_.join();
  }
  for (int fd : members_) {
    if (fd >= 0) ::close(fd);
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  for (int fd : wake_) {
    if (fd >= 0) ::close(fd);
  }
}

void MemberListener::start(const membership::Secret& secret, std::uint32_t me,
                           std::uint32_t world) {
  secret_ = secret;
  me_ = me;
  world_ = world;
  members_.assign(world, -1);
  missing_ = world - 1 - me;
  if (missing_ == 0) return;
  thread_ = std::thread([this] { run(); });
}

void MemberListener::refuse(const std::string& peer, const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (refused_++ == 0) first_refusal_ = "from " + peer + ": " + why;
}

std::uint64_t MemberListener::refused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refused_;
}

std::string MemberListener::first_refusal() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_refusal_;
}

bool MemberListener::serve(Unproven& u) {
  for (;;) {
    unsigned char bytes[membership::kChallengeBytes];
    const std::size_t want = std::min(u.handshake.needed(), sizeof bytes);
    const ssize_t n = ::recv(u.fd, bytes, want, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n <= 0) {
      refuse(u.peer, "closed the connection before proving membership");
      return false;
    }
    const ListenerHandshake::Step step = u.handshake.take(bytes, static_cast<std::size_t>(n));
    switch (step.kind) {
      case ListenerHandshake::Kind::kMore:
        break;
      case ListenerHandshake::Kind::kSend:
        if (!send_whole(u.fd, step.reply)) {
          refuse(u.peer, "did not take the challenge");
          return false;
        }
        break;
      case ListenerHandshake::Kind::kRefused:
        refuse(u.peer, step.why);
        return false;
      case ListenerHandshake::Kind::kAccepted: {
        std::lock_guard<std::mutex> lock(mutex_);
        if (members_[step.rank] >= 0 || !send_whole(u.fd, step.reply)) {
          // A member never dials again once accepted; count it rather than trust it.
          if (refused_++ == 0) first_refusal_ = "from " + u.peer + ": a second connection";
          return false;
        }
        members_[step.rank] = u.fd;
        u.fd = -1;
        --missing_;
        changed_.notify_all();
        return false;
      }
    }
  }
}

void MemberListener::run() {
  std::deque<std::unique_ptr<Unproven>> unproven;
  const auto close_one = [&](std::size_t i) {
    if (unproven[i]->fd >= 0) ::close(unproven[i]->fd);
    unproven.erase(unproven.begin() + static_cast<std::ptrdiff_t>(i));
  };
  std::vector<pollfd> polled;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (missing_ == 0) break;
    }
    polled.clear();
    polled.push_back({wake_[0], POLLIN, 0});
    polled.push_back({listen_fd_, POLLIN, 0});
    for (const auto& u : unproven) polled.push_back({u->fd, POLLIN, 0});
    const int rv = ::poll(polled.data(), polled.size(), 50);
    if (rv < 0 && errno != EINTR) break;
    if (polled[0].revents != 0) break;  // stopped

    // Handshakes first (they were polled; erasing from the back keeps the indices), then
    // new connections, then the expired.
    for (std::size_t p = polled.size(); p-- > 2;) {
      if (polled[p].revents != 0 && !serve(*unproven[p - 2])) close_one(p - 2);
    }
    if (polled[1].revents != 0) {
      // A bounded batch, each served at once (a member's hello is usually there before the
      // accept), so that a flood in the backlog cannot push a member out unread.
      for (std::size_t batch = 0; batch < kMaxUnproven / 2; ++batch) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN, or an error the next poll reports again
        auto u = std::make_unique<Unproven>(
            Unproven{fd, Clock::now(), peer_text(fd),
                     ListenerHandshake(secret_, me_, world_, membership::draw_nonce())});
        if (!serve(*u)) {
          if (u->fd >= 0) ::close(u->fd);
          continue;
        }
        if (unproven.size() >= kMaxUnproven) {
          refuse(unproven.front()->peer, "was still unproven among too many");
          close_one(0);
        }
        unproven.push_back(std::move(u));
      }
    }
    const auto now = Clock::now();
    while (!unproven.empty() && now - unproven.front()->since > kHandshakeLimit) {
      refuse(unproven.front()->peer, "held the connection without proving membership");
      close_one(0);
    }
  }
  for (std::size_t i = unproven.size(); i-- > 0;) {
    refuse(unproven[i]->peer, "was still unproven when every member had connected");
    close_one(i);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  finished_ = true;
  changed_.notify_all();
}

std::vector<int> MemberListener::wait_for_members(const Deadline& deadline) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_until(lock, deadline.at(), [&] { return missing_ == 0 || finished_; });
  }
  if (thread_.joinable()) {
    const char stop = 's';
    (void)!::write(wake_[1], &stop, 1);
    thread_.join();
  }
  if (listen_fd_ >= 0) {  // latecomers are refused by the kernel from here
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> members = members_;
  std::fill(members_.begin(), members_.end(), -1);
  return members;
}

int dial_member(const SocketAddress& peer, std::uint32_t from, std::uint32_t to,
                std::uint32_t world, const membership::Secret& secret, const Deadline& deadline) {
  const auto timed_out = [&](const char* phase) {
    return DeadlineExceeded(
        detail::concat("did not ", phase, " within ", format_duration(deadline.timeout())));
  };
  Backoff backoff(std::chrono::milliseconds(5), std::chrono::milliseconds(100));
  for (;;) {
    if (deadline.passed()) throw timed_out("complete the membership handshake");
    const int fd = ::socket(peer.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw RuntimeFailure(errno_text("socket"));
    struct Closer {
      int fd;
      bool keep = false;
      ~Closer() {
        if (!keep) ::close(fd);
      }
    } closer{fd};
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&peer.storage), peer.length) != 0 &&
        errno != EINPROGRESS) {
      throw RuntimeFailure(errno_text("connect"));
    }
    if (!wait_for(fd, POLLOUT, deadline)) throw timed_out("connect");
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
    if (error != 0) throw RuntimeFailure(std::string("connect: ") + std::strerror(error));

    membership::Hello hello;
    hello.from = from;
    hello.to = to;
    hello.world = world;
    hello.nonce = membership::draw_nonce();
    const Frame hello_frame = membership::encode_hello(hello);
    unsigned char challenge_bytes[membership::kChallengeBytes];
    Io io = write_exactly(fd, hello_frame, deadline);
    if (io == Io::kDone) {
      io = read_exactly(fd, challenge_bytes, sizeof challenge_bytes, deadline);
    }
    if (io == Io::kTimeout) throw timed_out("answer the membership handshake");
    if (io == Io::kClosed) {  // dropped among strangers: dial again
      backoff.sleep(deadline);
      continue;
    }
    const auto challenge = membership::decode_challenge(challenge_bytes, sizeof challenge_bytes);
    if (!challenge ||
        !membership::macs_equal(challenge->mac,
                                membership::listener_mac(secret, hello_frame, challenge->nonce))) {
      throw RuntimeFailure(
          "what listens there could not prove it is that rank of this job (another process "
          "on its port?)");
    }
    io = write_exactly(
        fd,
        membership::encode_proof(membership::connector_mac(secret, hello_frame, challenge->nonce)),
        deadline);
    unsigned char accept[membership::kAcceptBytes];
    if (io == Io::kDone) io = read_exactly(fd, accept, sizeof accept, deadline);
    if (io == Io::kTimeout) throw timed_out("accept this rank");
    if (io == Io::kClosed) {
      backoff.sleep(deadline);
      continue;
    }
    if (!membership::is_accept(accept, sizeof accept)) {
      throw RuntimeFailure("the listener answered the proof with something else than an accept");
    }
    closer.keep = true;
    return fd;
  }
}

}  // namespace gloo_detail
}  // namespace rv
