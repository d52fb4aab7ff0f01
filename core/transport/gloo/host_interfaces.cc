#include "core/transport/gloo/host_interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <bitset>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/transport/gloo/pair_mesh.h"

namespace rv {
namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

std::uint32_t host_order(const sockaddr* address) {
  return ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr);
}

}  // namespace

BindCandidates local_bind_candidates(std::uint32_t rank) {
  BindCandidates mine;
  mine.rank = rank;
  mine.host = host_name();
  // The same notion of place as the pair mesh's loopback check (pair_mesh.h), so that what
  // auto calls one place is what the mesh lets bind a loopback address.
  const std::string network = gloo_detail::network_identity();
  mine.place = network.empty() ? "host '" + mine.host + "'" : "network " + network;

  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) {
    throw RuntimeFailure(detail::concat("bind address (--hostname auto) on rank ", rank,
                                        ": getifaddrs: ", std::strerror(errno)));
  }
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if ((entry->ifa_flags & IFF_UP) == 0) continue;
    InterfaceAddress address;
    address.interface = entry->ifa_name;
    address.address = host_order(entry->ifa_addr);
    address.prefix_length =
        entry->ifa_netmask == nullptr
            ? 32
            : static_cast<int>(std::bitset<32>(host_order(entry->ifa_netmask)).count());
    address.loopback = (entry->ifa_flags & IFF_LOOPBACK) != 0 || (address.address >> 24) == 127;
    mine.addresses.push_back(address);
  }
  ::freeifaddrs(list);
  return mine;
}

}  // namespace rv
