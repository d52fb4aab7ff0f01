#include "core/transport/gloo/pair_mesh.h"

#include <arpa/inet.h>
#include <gloo/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/context.h>
#include <gloo/transport/device.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <utility>

#include "core/deadline.h"
#include "core/error.h"
#include "core/transport/gloo/gloo_failure.h"

namespace rv {
namespace gloo_detail {
namespace {

// tcp::Pair waits for its first connection up to this many times its timeout (Pair::waitUntil,
// the same in the Debian snapshot and in Gloo's main branch); the pairs get the deadline
// divided by it, so that wait ends with our deadline.
constexpr int kGlooConnectWaitFactor = 5;

constexpr const char* kRecordMagic = "reduce-verify mesh 1";

// A gloo::Context whose device and pairs are installed here: the protected members Gloo's
// own connectFullMesh would set.
class MeshContext final : public ::gloo::Context {
 public:
  MeshContext(int rank_of_this, int world) : ::gloo::Context(rank_of_this, world) {}
  void adopt(std::shared_ptr<::gloo::transport::Device> device,
             std::shared_ptr<::gloo::transport::Context> pairs) {
    device_ = std::move(device);
    transportContext_ = std::move(pairs);
  }
};

// Parses rank `peer`'s record; anything malformed is a RuntimeFailure naming the rank.
MeshRecord decode(const std::vector<char>& bytes, std::uint32_t peer, const std::string& label) {
  const auto malformed = [&](const std::string& what) {
    return RuntimeFailure(label + ": rank " + std::to_string(peer) +
                          " published a malformed pair record (" + what +
                          "): another reduce-verify version, or a corrupted store?");
  };
  MeshRecord record;
  std::size_t at = 0;
  const auto next_line = [&]() {
    std::size_t end = at;
    while (end < bytes.size() && bytes[end] != '\n') ++end;
    if (end == bytes.size()) throw malformed("truncated header");
    std::string line(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                     bytes.begin() + static_cast<std::ptrdiff_t>(end));
    at = end + 1;
    return line;
  };
  const auto field = [&](const char* key) {
    const std::string line = next_line();
    const std::string prefix = std::string(key) + " ";
    if (line.rfind(prefix, 0) != 0) throw malformed(std::string("no '") + key + "' line");
    return line.substr(prefix.size());
  };
  try {
    if (next_line() != kRecordMagic) throw malformed("unknown format");
    record.rank = static_cast<std::uint32_t>(std::stoul(field("rank")));
    record.world = static_cast<std::uint32_t>(std::stoul(field("world")));
    record.bound = field("bound");
    record.loopback = field("loopback") == "1";
    record.host = field("host");
    record.network = field("network");
    std::istringstream counts(field("addresses"));
    std::size_t count = 0;
    counts >> count >> record.address_size;
    if (!counts || count + 1 != record.world) throw malformed("address count");
    record.addresses.assign(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.end());
    if (record.addresses.size() != count * record.address_size) throw malformed("address bytes");
  } catch (const std::logic_error&) {  // std::stoul
    throw malformed("a number");
  }
  if (record.rank != peer) throw malformed("it names rank " + std::to_string(record.rank));
  return record;
}

const sockaddr_storage* socket_address(const ::gloo::transport::Address& address) {
  const auto* tcp = dynamic_cast<const ::gloo::transport::tcp::Address*>(&address);
  return tcp == nullptr ? nullptr : &tcp->getSockaddr();
}

bool is_loopback(const ::gloo::transport::Address& address) {
  const sockaddr_storage* ss = socket_address(address);
  if (ss == nullptr) return false;
  if (ss->ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(ss);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (ss->ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(ss);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

// "[10.0.0.1]:40123". Not tcp::Address::str(), which prints the port in network byte order.
std::string address_text(const ::gloo::transport::Address& address) {
  const sockaddr_storage* ss = socket_address(address);
  char ip[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (ss != nullptr && ss->ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(ss);
    ::inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    port = ntohs(in->sin_port);
  } else if (ss != nullptr && ss->ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(ss);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    port = ntohs(in6->sin6_port);
  }
  return "[" + std::string(ip) + "]:" + std::to_string(port);
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// Where a rank's loopback reaches: its network namespace on its machine, or (without /proc)
// its host name.
std::string place_of(const MeshRecord& record) {
  return record.network.empty() ? "host '" + record.host + "'" : "network " + record.network;
}

// A loopback address is reachable only from its own network namespace: a world whose ranks
// live in several would connect a peer elsewhere to whatever listens on its own loopback.
// Every rank sees the same records, so every rank refuses alike.
void refuse_loopback_across_places(const std::vector<MeshRecord>& records,
                                   const std::string& label) {
  std::map<std::string, std::vector<std::uint32_t>> ranks_by_place;
  std::vector<std::uint32_t> on_loopback;
  std::string example;
  for (const MeshRecord& record : records) {
    ranks_by_place[place_of(record)].push_back(record.rank);
    if (record.loopback) {
      on_loopback.push_back(record.rank);
      if (example.empty()) example = record.bound;
    }
  }
  if (ranks_by_place.size() < 2 || on_loopback.empty()) return;
  std::ostringstream text;
  text << label << ": " << ranks_text(on_loopback) << " bind"
       << (on_loopback.size() == 1 ? "s" : "") << " a loopback address (" << example
       << "), which no other host or network namespace can "
       << "reach, but the world spans " << ranks_by_place.size() << " of them (";
  bool first = true;
  for (const auto& [place, ranks] : ranks_by_place) {
    text << (first ? "" : "; ") << ranks_text(ranks) << " on " << place << " of host '"
         << records[ranks.front()].host << "'";
    first = false;
  }
  text << "): give each rank --hostname with an address of its own host that the others can "
          "reach";
  throw RuntimeFailure(text.str());
}

// Waits for every peer's record until the deadline; the error names each rank still missing.
std::vector<MeshRecord> await_records(::gloo::rendezvous::Store& store, const StoreHasKey& has_key,
                                      const MeshRecord& mine, const Deadline& deadline,
                                      const std::string& label) {
  const std::uint32_t world = mine.world;
  std::vector<bool> published(world, false);
  published[mine.rank] = true;
  Backoff backoff(std::chrono::milliseconds(1), std::chrono::milliseconds(10));
  for (;;) {
    std::vector<std::uint32_t> missing;
    for (std::uint32_t r = 0; r < world; ++r) {
      if (!published[r]) published[r] = has_key(mesh_record_key(r));
      if (!published[r]) missing.push_back(r);
    }
    if (missing.empty()) break;
    if (deadline.passed()) {
      throw DeadlineExceeded(
          label + ": " + ranks_text(missing) + " arrived but published no pair addresses within " +
          format_duration(deadline.timeout()) + " (died or froze after arriving?)");
    }
    backoff.sleep(deadline);
  }
  std::vector<MeshRecord> records(world);
  for (std::uint32_t r = 0; r < world; ++r) {
    if (r == mine.rank) {
      records[r] = mine;
      continue;
    }
    std::vector<char> bytes;
    try {
      bytes = store.get(mesh_record_key(r));  // present: returns at once
    } catch (...) {
      throw RuntimeFailure(label + ": cannot read the pair record of rank " + std::to_string(r) +
                           ": " + current_exception_text());
    }
    records[r] = decode(bytes, r, label);
    if (records[r].world != world) {
      throw RuntimeFailure(label + ": rank " + std::to_string(r) + " is in a world of " +
                           std::to_string(records[r].world) + " ranks, this rank in one of " +
                           std::to_string(world));
    }
  }
  return records;
}

// The address rank `peer` listens on for its pair with `me`.
std::vector<char> address_for(const MeshRecord& peer, std::uint32_t me) {
  const std::size_t index = me < peer.rank ? me : me - 1;
  const auto begin =
      peer.addresses.begin() + static_cast<std::ptrdiff_t>(index * peer.address_size);
  return std::vector<char>(begin, begin + static_cast<std::ptrdiff_t>(peer.address_size));
}

bool is_connect_timeout(const std::string& text) {
  return text.find("Connect timeout") != std::string::npos ||
         text.find("Timed out") != std::string::npos;
}

}  // namespace

std::string mesh_record_key(std::uint32_t rank) {
  return "reduce-verify/pairs/" + std::to_string(rank);
}

std::vector<char> encode_mesh_record(const MeshRecord& record) {
  std::ostringstream header;
  header << kRecordMagic << "\nrank " << record.rank << "\nworld " << record.world << "\nbound "
         << record.bound << "\nloopback " << (record.loopback ? 1 : 0) << "\nhost " << record.host
         << "\nnetwork " << record.network << "\naddresses " << (record.world - 1) << " "
         << record.address_size << "\n";
  const std::string text = header.str();
  std::vector<char> bytes(text.begin(), text.end());
  bytes.insert(bytes.end(), record.addresses.begin(), record.addresses.end());
  return bytes;
}

std::string network_identity() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  struct stat net {};
  if (!std::getline(boot, boot_id) || boot_id.empty() || ::stat("/proc/self/ns/net", &net) != 0) {
    return "";
  }
  return boot_id + "/" + std::to_string(static_cast<unsigned long long>(net.st_ino));
}

std::shared_ptr<::gloo::Context> connect_pair_mesh(
    ::gloo::rendezvous::Store& store, const StoreHasKey& has_key,
    const std::shared_ptr<::gloo::transport::Device>& device, const GlooConnectOptions& options,
    const std::string& label) {
  const Deadline deadline(options.timeout);
  const std::uint32_t me = options.rank, world = options.world;
  auto context = std::make_shared<MeshContext>(static_cast<int>(me), static_cast<int>(world));
  context->setTimeout(options.timeout);

  std::shared_ptr<::gloo::transport::Context> pairs;
  MeshRecord mine;
  mine.rank = me;
  mine.world = world;
  mine.host = host_name();
  mine.network = network_identity();
  try {
    pairs = device->createContext(static_cast<int>(me), static_cast<int>(world));
    // A pair's timeout is fixed when it is created, and only its first connect uses it here
    // (our transfers pass their own deadlines): divided by Gloo's factor, so a connect waits
    // no longer than the deadline; the context's goes back to the full timeout afterwards.
    const auto wait =
        (deadline.remaining() + std::chrono::milliseconds(kGlooConnectWaitFactor - 1)) /
        kGlooConnectWaitFactor;
    pairs->setTimeout(std::max(wait, std::chrono::milliseconds(1)));
    for (std::uint32_t peer = 0; peer < world; ++peer) {
      if (peer == me) continue;
      auto& pair = pairs->createPair(static_cast<int>(peer));
      const std::vector<char> address = pair->address().bytes();
      if (mine.addresses.empty()) {
        mine.address_size = address.size();
        mine.bound = address_text(pair->address());
        mine.loopback = is_loopback(pair->address());
      }
      mine.addresses.insert(mine.addresses.end(), address.begin(), address.end());
    }
    pairs->setTimeout(options.timeout);
  } catch (...) {
    throw RuntimeFailure(label + ": cannot create the TCP pairs: " + current_exception_text());
  }
  if (world == 1) {
    context->adopt(device, std::move(pairs));
    return context;
  }

  try {
    store.set(mesh_record_key(me), encode_mesh_record(mine));
  } catch (...) {
    throw RuntimeFailure(
        label + ": cannot publish this rank's pair addresses: " + current_exception_text());
  }
  const std::vector<MeshRecord> records = await_records(store, has_key, mine, deadline, label);
  refuse_loopback_across_places(records, label);

  // Every pair connects at once, so an unreachable or silent peer costs the deadline once,
  // not once per peer; each connect ends by the deadline (the pairs' timeout above).
  std::vector<std::string> failures(world);
  std::vector<std::thread> connecting;
  for (std::uint32_t peer = 0; peer < world; ++peer) {
    if (peer == me) continue;
    ::gloo::transport::Pair* pair = pairs->getPair(static_cast<int>(peer)).get();
    connecting.emplace_back(
        [pair, address = address_for(records[peer], me), &failure = failures[peer]] {
          try {
            pair->connect(address);
          } catch (...) {
            failure = current_exception_text();
          }
        });
  }
  for (std::thread& t : connecting) t.join();

  std::ostringstream text;
  bool all_timeouts = true, any = false;
  for (std::uint32_t peer = 0; peer < world; ++peer) {
    if (failures[peer].empty()) continue;
    const std::string who = "rank " + std::to_string(peer) + " (at " + records[peer].bound + ")";
    text << (any ? "; " : "");
    if (is_connect_timeout(failures[peer])) {
      text << who << " did not connect within " << format_duration(options.timeout)
           << " (dead, frozen, or unreachable from here?)";
    } else {
      all_timeouts = false;
      text << "cannot connect to " << who << ": " << failures[peer]
           << " (is that rank's --hostname an address of its own host that this host can "
              "reach?)";
    }
    any = true;
  }
  if (any) {
    if (all_timeouts) throw DeadlineExceeded(label + ": " + text.str());
    throw RuntimeFailure(label + ": " + text.str());
  }
  context->adopt(device, std::move(pairs));
  return context;
}

}  // namespace gloo_detail
}  // namespace rv
