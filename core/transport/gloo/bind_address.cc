#include "core/transport/gloo/bind_address.h"

#include <sstream>

#include "core/deadline.h"
#include "core/error.h"

namespace rv {
namespace {

std::uint32_t netmask(int prefix_length) {
  if (prefix_length <= 0) return 0;
  if (prefix_length >= 32) return 0xFFFFFFFFu;
  return 0xFFFFFFFFu << (32 - prefix_length);
}

// The ranks of one place and the addresses they published, in rank order.
struct Place {
  std::string name, host;
  std::vector<std::uint32_t> ranks;
  std::vector<InterfaceAddress> addresses;  // every rank's, loopback ones included
};

// The places of the world in the order their first rank appears.
std::vector<Place> places_of(const std::vector<BindCandidates>& world) {
  std::vector<Place> places;
  for (const BindCandidates& rank : world) {
    Place* found = nullptr;
    for (Place& place : places) {
      if (place.name == rank.place) found = &place;
    }
    if (found == nullptr) {
      places.push_back({rank.place, rank.host, {}, {}});
      found = &places.back();
    }
    found->ranks.push_back(rank.rank);
    found->addresses.insert(found->addresses.end(), rank.addresses.begin(), rank.addresses.end());
  }
  return places;
}

bool reaches(const InterfaceAddress& own, const Place& place) {
  if (own.loopback) return false;
  for (const InterfaceAddress& theirs : place.addresses) {
    if (!theirs.loopback && share_subnet(own, theirs)) return true;
  }
  return false;
}

std::string addresses_text(const std::vector<InterfaceAddress>& addresses) {
  if (addresses.empty()) return "no IPv4 address on an interface that is up";
  std::string text;
  for (const InterfaceAddress& address : addresses) {
    text += (text.empty() ? "" : ", ") + describe(address);
  }
  return text;
}

// "network b/4026532 (host 'box', ranks 0, 1: 10.231.0.1/24 on eth0)"
std::string place_text(const Place& place) {
  std::vector<InterfaceAddress> routable;
  for (const InterfaceAddress& address : place.addresses) {
    bool seen = false;
    for (const InterfaceAddress& kept : routable) {
      seen = seen || (kept.address == address.address && kept.interface == address.interface);
    }
    if (!address.loopback && !seen) routable.push_back(address);
  }
  return place.name + " (host '" + place.host + "', " + ranks_text(place.ranks) + ": " +
         (routable.empty() ? std::string("loopback only") : addresses_text(routable)) + ")";
}

std::string places_text(const std::vector<const Place*>& places) {
  std::string text;
  for (const Place* place : places) text += (text.empty() ? "" : "; ") + place_text(*place);
  return text;
}

}  // namespace

bool share_subnet(const InterfaceAddress& a, const InterfaceAddress& b) {
  if (a.address == b.address) return false;
  const int longer = a.prefix_length > b.prefix_length ? a.prefix_length : b.prefix_length;
  return ((a.address ^ b.address) & netmask(longer)) == 0;
}

std::string dotted(std::uint32_t address) {
  std::ostringstream text;
  text << (address >> 24) << '.' << ((address >> 16) & 0xFFu) << '.' << ((address >> 8) & 0xFFu)
       << '.' << (address & 0xFFu);
  return text.str();
}

std::string describe(const InterfaceAddress& address) {
  return dotted(address.address) + "/" + std::to_string(address.prefix_length) + " on " +
         address.interface + (address.loopback ? " (loopback)" : "");
}

std::string choose_bind_address(const std::vector<BindCandidates>& world, std::uint32_t rank) {
  RV_ENFORCE_LT(InputError, rank, world.size(), "bind address: rank out of range");
  for (std::size_t r = 0; r < world.size(); ++r) {
    if (world[r].rank != r) {
      throw InputError(
          detail::concat("bind address: the record in slot ", r, " is rank ", world[r].rank, "'s"));
    }
  }
  const std::vector<Place> places = places_of(world);
  if (places.size() == 1) return "127.0.0.1";

  const BindCandidates& mine = world[rank];
  std::vector<const Place*> others;
  for (const Place& place : places) {
    if (place.name != mine.place) others.push_back(&place);
  }
  for (const InterfaceAddress& own : mine.addresses) {
    bool everywhere = !own.loopback;
    for (const Place* place : others) everywhere = everywhere && reaches(own, *place);
    if (everywhere) return dotted(own.address);
  }

  // None: name the places no address of this rank reaches at all, or, when each is reached
  // by some address but no single address reaches them all, every other place.
  std::vector<const Place*> unreached;
  for (const Place* place : others) {
    bool reached = false;
    for (const InterfaceAddress& own : mine.addresses) reached = reached || reaches(own, *place);
    if (!reached) unreached.push_back(place);
  }
  std::ostringstream text;
  text << "bind address (--hostname auto): rank " << rank << " on " << mine.place << " (host '"
       << mine.host << "') has no address that every other place of the world can reach; its "
       << "addresses: " << addresses_text(mine.addresses) << "; ";
  if (!unreached.empty()) {
    text << "none shares a subnet with " << places_text(unreached);
  } else {
    text << "each reaches only some of " << places_text(others);
  }
  text << ". Pass each rank --hostname with an address of its own host that the ranks on "
          "every other host can reach";
  throw InputError(text.str());
}

}  // namespace rv
