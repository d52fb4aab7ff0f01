// Gloo's TCP pair and context, changed in two ways (docs/DESIGN.md §10):
//   - a MemberPair never listens and never dials: tcp::Pair's constructor opens a listening
//     socket that would take the first connection to arrive, whoever makes it, so it is
//     closed at once; the pair is given a socket that has already proven membership
//     (member_connections.h) with adopt();
//   - a frame Gloo's reader refuses (a GLOO_ENFORCE in tcp::Pair::read, e.g. a header whose
//     length is larger than the posted receive) closes the pair with an error naming the
//     peer's rank, which every waiting operation then reports; in Gloo the exception
//     escapes its I/O thread and terminates the process.
// MemberContext is a tcp::Context whose pairs are MemberPairs.
#pragma once

#include <gloo/transport/tcp/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/tcp/pair.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace rv {
namespace gloo_detail {

class MemberPair final : public ::gloo::transport::tcp::Pair {
 public:
  MemberPair(::gloo::transport::tcp::Context* context, ::gloo::transport::tcp::Device* device,
             int rank, std::chrono::milliseconds timeout);

  // Takes over `fd`, a connected socket to this pair's peer that has proven membership.
  void adopt(int fd);

  // Gloo's, except that once the peer sent a frame Gloo refused, they throw that error at
  // once (Gloo's unbound-buffer send and recv do not look at the pair's error, so a transfer
  // posted after the pair failed would wait out its deadline instead of naming the peer).
  void send(::gloo::transport::UnboundBuffer* buffer, std::uint64_t slot, std::size_t offset,
            std::size_t bytes) override;
  void recv(::gloo::transport::UnboundBuffer* buffer, std::uint64_t slot, std::size_t offset,
            std::size_t bytes) override;

  // Why the pair was closed for a frame Gloo refused; "" when it was not.
  std::string refusal() const;

 protected:
  bool read() override;

 private:
  void throw_if_refused_a_frame() const;

  std::atomic<bool> refused_a_frame_{false};
  std::string refusal_;  // written once, before refused_a_frame_ is set

  // Room in case libgloo's tcp::Pair is larger than its installed headers say
  // (compat/gloo/common/memory.h): the library would write here, not past the allocation.
  unsigned char slack_[256] = {};
};

class MemberContext final : public ::gloo::transport::tcp::Context {
 public:
  MemberContext(std::shared_ptr<::gloo::transport::tcp::Device> device, int of_rank, int world)
      : ::gloo::transport::tcp::Context(std::move(device), of_rank, world) {}

  std::unique_ptr<::gloo::transport::Pair>& createPair(int peer) override;
};

}  // namespace gloo_detail
}  // namespace rv
