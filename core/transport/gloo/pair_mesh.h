// The second half of a Gloo rendezvous: once every rank has arrived (gloo_rendezvous.h), the
// ranks exchange their pair addresses through the store and connect a full mesh of TCP
// pairs, all under one deadline, naming every peer that does not get there.
//
// Why not Gloo's own rendezvous::Context::connectFullMesh: in the Debian snapshot it reads
// every lower rank's host name with Store::get, whose wait has a fixed 30 s limit
// (Store::kDefaultTimeout), and it connects the pairs one after another, each waiting up to
// five times the context timeout (tcp::Pair::waitUntil: "a longer timeout when waiting for
// initial connect"). A rank that died between arriving and connecting therefore held its
// peers for 30 s or for 5 × --timeout, once per unreachable peer, and the error named an
// address, not a rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/transport/gloo/gloo_rendezvous.h"

namespace gloo {
class Context;
namespace transport {
class Device;
}  // namespace transport
}  // namespace gloo

namespace rv {
namespace gloo_detail {

// What a rank publishes before connecting: who and where it is, and the address each of its
// pairs listens on. Stored under mesh_record_key(rank) as a few text lines and the addresses.
struct MeshRecord {
  std::uint32_t rank = 0, world = 0;
  std::string bound;      // its pairs' listening address, e.g. "[10.0.0.1]:40123"
  bool loopback = false;  // that address is a loopback address
  std::string host;       // gethostname()
  std::string network;    // network_identity()
  std::size_t address_size = 0;
  std::vector<char> addresses;  // world − 1 Gloo pair addresses, by peer rank, itself left out
};

std::string mesh_record_key(std::uint32_t rank);
std::vector<char> encode_mesh_record(const MeshRecord& record);

// Where a process's network is, so that ranks can tell whether a peer shares their loopback:
// "<boot id>/<network namespace inode>" (one machine boot, one network namespace), "" when
// /proc cannot say.
std::string network_identity();

// Connects `device`'s pairs to every other rank of options.world within options.timeout,
// measured from the call. `label` starts every message ("gloo rendezvous on rank 1 of 4
// (store …)"). Throws DeadlineExceeded naming the ranks that published no addresses or did
// not connect in time, RuntimeFailure naming the peer (and its address) a connection to
// failed, or every rank bound to a loopback address when the ranks live on different hosts
// or network namespaces (a peer elsewhere can never reach it).
std::shared_ptr<::gloo::Context> connect_pair_mesh(
    ::gloo::rendezvous::Store& store, const StoreHasKey& has_key,
    const std::shared_ptr<::gloo::transport::Device>& device, const GlooConnectOptions& options,
    const std::string& label);

}  // namespace gloo_detail
}  // namespace rv
