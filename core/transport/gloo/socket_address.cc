#include "core/transport/gloo/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace rv {
namespace gloo_detail {

std::string SocketAddress::ip() const {
  char text[INET6_ADDRSTRLEN] = "?";
  if (storage.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
                sizeof text);
  } else if (storage.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text,
                sizeof text);
  }
  return text;
}

std::uint16_t SocketAddress::port() const {
  if (storage.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  }
  if (storage.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  }
  return 0;
}

void SocketAddress::set_port(std::uint16_t port) {
  if (storage.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  } else if (storage.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
  }
}

std::string SocketAddress::text() const { return "[" + ip() + "]:" + std::to_string(port()); }

bool SocketAddress::is_loopback() const {
  if (storage.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (storage.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

bool parse_socket_address(const std::string& ip, const std::string& port, SocketAddress* out) {
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  const unsigned long number = std::stoul(port);
  if (number == 0 || number > 65535) return false;
  SocketAddress address;
  if (ip.find(':') == std::string::npos) {
    auto* in = reinterpret_cast<sockaddr_in*>(&address.storage);
    if (::inet_pton(AF_INET, ip.c_str(), &in->sin_addr) != 1) return false;
    in->sin_family = AF_INET;
    address.length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
    if (::inet_pton(AF_INET6, ip.c_str(), &in6->sin6_addr) != 1) return false;
    in6->sin6_family = AF_INET6;
    address.length = sizeof(sockaddr_in6);
  }
  address.set_port(static_cast<std::uint16_t>(number));
  *out = address;
  return true;
}

SocketAddress resolve_bind_address(const std::string& hostname) {
  const std::string named = "--hostname '" + hostname + "'";
  if (hostname.empty()) throw InputError("gloo: --hostname is empty");
  for (unsigned char c : hostname) {
    if (c <= ' ' || c == 0x7f) {
      throw InputError("gloo: " + named +
                       " holds white space or a control character: give a name or address "
                       "of this host");
    }
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rv = ::getaddrinfo(hostname.c_str(), nullptr, &hints, &found);
  if (rv != 0 || found == nullptr) {
    throw InputError("gloo: " + named + " does not resolve (" +
                     (rv == EAI_SYSTEM ? std::string(std::strerror(errno)) : ::gai_strerror(rv)) +
                     "): give a name or address of this host");
  }
  std::string tried, last_error;
  for (const addrinfo* at = found; at != nullptr; at = at->ai_next) {
    if (at->ai_family != AF_INET && at->ai_family != AF_INET6) continue;
    if (at->ai_addrlen > sizeof(sockaddr_storage)) continue;
    SocketAddress address;
    std::memcpy(&address.storage, at->ai_addr, at->ai_addrlen);
    address.length = static_cast<socklen_t>(at->ai_addrlen);
    address.set_port(0);
    const int fd = ::socket(at->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const bool bound =
        ::bind(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length) == 0;
    const int error = errno;
    ::close(fd);
    if (bound) {
      ::freeaddrinfo(found);
      return address;
    }
    tried += (tried.empty() ? "" : ", ") + address.ip();
    last_error = std::strerror(error);
  }
  ::freeaddrinfo(found);
  // It resolves, so it is a name, but not one of this host (or its interface is down): a
  // runtime failure of this rank, as when Gloo itself could not bind it.
  throw RuntimeFailure(
      std::string("it resolves to ") + (tried.empty() ? "no IP address" : tried) +
      (last_error.empty() ? "" : ", which cannot be bound here (" + last_error + ")"));
}

SocketAddress bound_address(int fd) {
  SocketAddress address;
  address.length = sizeof address.storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    throw RuntimeFailure(std::string("getsockname: ") + std::strerror(errno));
  }
  return address;
}

}  // namespace gloo_detail
}  // namespace rv
