// Which address a rank's Gloo TCP device binds when the user gave none (`run --hostname auto`):
// the pure choice, from every rank's published place and IPv4 addresses, with no sockets and
// no files, so that it is tested alone (tests/transport/bind_address_test.cc). Collecting a
// rank's own candidates is host_interfaces.h; exchanging them is the job directory step
// (core/transport/gloo/bind_address_agreement.h).
//
// The rule, the same on every rank because every rank reads the same records:
// - every rank in one place (one network namespace of one machine) → 127.0.0.1: the loopback
//   reaches every peer and nothing outside;
// - otherwise the first of the rank's own non-loopback addresses, in the order it published
//   them, that shares a subnet with an address of every other place: the interface all places
//   can reach is preferred over one only some can (a container bridge, a management network);
// - none → InputError naming the rank, its place, its addresses and the places it cannot
//   reach, and telling the user to pass --hostname.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rv {

// One IPv4 address of an interface that is up.
struct InterfaceAddress {
  std::string interface;      // "eth0"
  std::uint32_t address = 0;  // host byte order
  int prefix_length = 32;     // the netmask, as a count of leading one bits
  bool loopback = false;      // on a loopback interface, or in 127.0.0.0/8: never chosen
};

// What a rank publishes: where it is and the addresses it could bind.
struct BindCandidates {
  std::uint32_t rank = 0;
  // Where the rank's loopback reaches: ranks with the same place share it. "network
  // <boot id>/<netns inode>", or "host '<name>'" where /proc cannot say.
  std::string place;
  std::string host;  // gethostname(), for messages
  std::vector<InterfaceAddress> addresses;
};

// Two addresses share a subnet when the longer of their two prefixes holds both, so each is
// on-link for the other, and they are not the same address (an equal address in another
// place is that place's own, not this one: a peer there would connect to itself).
bool share_subnet(const InterfaceAddress& a, const InterfaceAddress& b);

// "10.231.0.1".
std::string dotted(std::uint32_t address);
// "10.231.0.1/24 on eth0", "127.0.0.1/8 on lo (loopback)".
std::string describe(const InterfaceAddress& address);

// The address `rank` binds (dotted), by the rule above. `world` holds one record per rank,
// indexed by rank. Throws InputError when the rank has no address every other place can
// reach, or when the records are not one per rank.
std::string choose_bind_address(const std::vector<BindCandidates>& world, std::uint32_t rank);

}  // namespace rv
