// Where a rank's pairs listen: a TCP address as the mesh records carry it ("ip port", no
// raw socket structures, so no uninitialised bytes travel), and the one place --hostname is
// turned into an address (Gloo's own lookup dereferences an unset pointer when the name does
// not resolve).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace rv {
namespace gloo_detail {

struct SocketAddress {
  sockaddr_storage storage{};  // zeroed, then one sockaddr_in or sockaddr_in6
  socklen_t length = 0;

  std::string ip() const;  // "127.0.0.1", "::1"
  std::uint16_t port() const;
  std::string text() const;  // "[127.0.0.1]:40123"
  bool is_loopback() const;
  void set_port(std::uint16_t port);
};

// A numeric address and port, as mesh records carry them; nullopt-like `false` if malformed.
bool parse_socket_address(const std::string& ip, const std::string& port, SocketAddress* out);

// The first address `hostname` resolves to that this process can bind, as Gloo would pick
// it. Throws InputError naming the hostname when it is empty, holds white space or control
// characters, or does not resolve (bad input); RuntimeFailure saying what it resolves to
// when no address of it can be bound here (not an address of this host, or one that is
// down).
SocketAddress resolve_bind_address(const std::string& hostname);

// The address a socket is bound to (getsockname). Throws RuntimeFailure.
SocketAddress bound_address(int fd);

}  // namespace gloo_detail
}  // namespace rv
