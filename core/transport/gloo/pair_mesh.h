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
// address, not a rank. And the connections themselves are ours, each proving membership
// before Gloo reads a byte of it (member_connections.h, docs/DESIGN.md §10).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/transport/gloo/gloo_rendezvous.h"
#include "core/transport/gloo/member_connections.h"

namespace gloo {
class Context;
namespace transport {
class Device;
}  // namespace transport
}  // namespace gloo

namespace rv {
namespace gloo_detail {

// What a rank publishes before connecting: who and where it is, and the one address its
// listener (member_connections.h) takes the higher ranks' connections on. Stored under
// mesh_record_key(rank) as text lines: no raw socket structure, so no uninitialised byte,
// leaves the process.
struct MeshRecord {
  std::uint32_t rank = 0, world = 0;
  std::string bound;                   // its listening address, e.g. "[10.0.0.1]:40123"
  bool loopback = false;               // that address is a loopback address
  std::string host;                    // gethostname()
  std::string network;                 // network_identity()
  std::string listen_ip, listen_port;  // the same address, numeric
};

std::string mesh_record_key(std::uint32_t rank);
std::vector<char> encode_mesh_record(const MeshRecord& record);

// The store key of the job's membership secret, set by rank 0 before it arrives.
std::string membership_secret_key();

// Where a process's network is, so that ranks can tell whether a peer shares their loopback:
// "<boot id>/<network namespace inode>" (one machine boot, one network namespace), "" when
// /proc cannot say.
std::string network_identity();

// Connects `device`'s pairs to every other rank of options.world within options.timeout,
// measured from the call: publishes `listener`'s address, reads every rank's, reads the
// job's secret (rank 0 passes the one it drew), then dials every lower rank and takes every
// higher rank's connection on `listener`, each proving membership, and hands the sockets to
// Gloo. `label` starts every message ("gloo rendezvous on rank 1 of 4 (store …)"). Throws
// DeadlineExceeded naming the ranks that published no addresses or did not connect in time,
// RuntimeFailure naming the peer (and its address) a connection to failed, or every rank
// bound to a loopback address when the ranks live on different hosts or network namespaces
// (a peer elsewhere can never reach it). Connections that did not prove membership are
// counted and named in one line on stderr.
std::shared_ptr<::gloo::Context> connect_pair_mesh(
    ::gloo::rendezvous::Store& store, const StoreHasKey& has_key,
    const std::shared_ptr<::gloo::transport::Device>& device, MemberListener& listener,
    const membership::Secret* secret_of_rank0, const GlooConnectOptions& options,
    const std::string& label);

}  // namespace gloo_detail
}  // namespace rv
