#include "core/transport/gloo/pair_mesh.h"

#include <gloo/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/context.h>
#include <gloo/transport/device.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <utility>

#include "core/deadline.h"
#include "core/error.h"
#include "core/transport/gloo/gloo_failure.h"
#include "core/transport/gloo/member_pair.h"
#include "core/transport/gloo/socket_address.h"
#include "core/transport/membership/membership_secret.h"

namespace rv {
namespace gloo_detail {
namespace {

constexpr const char* kRecordMagic = "reduce-verify mesh 2";

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
    std::istringstream listen(field("listen"));
    listen >> record.listen_ip >> record.listen_port;
    SocketAddress parsed;
    if (!listen || !parse_socket_address(record.listen_ip, record.listen_port, &parsed)) {
      throw malformed("listening address");
    }
    if (at != bytes.size()) throw malformed("bytes after the record");
  } catch (const std::logic_error&) {  // std::stoul
    throw malformed("a number");
  }
  if (record.rank != peer) throw malformed("it names rank " + std::to_string(record.rank));
  return record;
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

}  // namespace

std::string membership_secret_key() { return "reduce-verify/membership-secret"; }

std::string mesh_record_key(std::uint32_t rank) {
  return "reduce-verify/pairs/" + std::to_string(rank);
}

std::vector<char> encode_mesh_record(const MeshRecord& record) {
  std::ostringstream header;
  header << kRecordMagic << "\nrank " << record.rank << "\nworld " << record.world << "\nbound "
         << record.bound << "\nloopback " << (record.loopback ? 1 : 0) << "\nhost " << record.host
         << "\nnetwork " << record.network << "\nlisten " << record.listen_ip << " "
         << record.listen_port << "\n";
  const std::string text = header.str();
  return std::vector<char>(text.begin(), text.end());
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
    const std::shared_ptr<::gloo::transport::Device>& device, MemberListener& listener,
    const membership::Secret* secret_of_rank0, const GlooConnectOptions& options,
    const std::string& label) {
  const Deadline deadline(options.timeout);
  const std::uint32_t me = options.rank, world = options.world;
  auto context = std::make_shared<MeshContext>(static_cast<int>(me), static_cast<int>(world));
  context->setTimeout(options.timeout);

  std::shared_ptr<MemberContext> pairs;
  std::vector<MemberPair*> pair_of(world, nullptr);
  try {
    auto tcp = std::dynamic_pointer_cast<::gloo::transport::tcp::Device>(device);
    if (!tcp) throw InternalError("not a Gloo TCP device");
    pairs = std::make_shared<MemberContext>(tcp, static_cast<int>(me), static_cast<int>(world));
    pairs->setTimeout(options.timeout);
    for (std::uint32_t peer = 0; peer < world; ++peer) {
      if (peer == me) continue;
      pair_of[peer] = static_cast<MemberPair*>(pairs->createPair(static_cast<int>(peer)).get());
    }
  } catch (const Error&) {
    throw;
  } catch (...) {
    throw RuntimeFailure(label + ": cannot create the TCP pairs: " + current_exception_text());
  }
  if (world == 1) {
    context->adopt(device, std::move(pairs));
    return context;
  }

  MeshRecord mine;
  mine.rank = me;
  mine.world = world;
  mine.host = host_name();
  mine.network = network_identity();
  mine.bound = listener.address().text();
  mine.loopback = listener.address().is_loopback();
  mine.listen_ip = listener.address().ip();
  mine.listen_port = std::to_string(listener.address().port());
  try {
    store.set(mesh_record_key(me), encode_mesh_record(mine));
  } catch (...) {
    throw RuntimeFailure(
        label + ": cannot publish this rank's pair addresses: " + current_exception_text());
  }
  const std::vector<MeshRecord> records = await_records(store, has_key, mine, deadline, label);
  refuse_loopback_across_places(records, label);

  // Rank 0 set the secret before it arrived, so it is there for every rank that has seen
  // rank 0's record.
  membership::Secret secret{};
  if (secret_of_rank0 != nullptr) {
    secret = *secret_of_rank0;
  } else {
    try {
      secret = membership::decode_secret(store.get(membership_secret_key()),
                                         "of rank 0 (store key " + membership_secret_key() + ")");
    } catch (const Error& e) {
      throw RuntimeFailure(label + ": " + e.what());
    } catch (...) {
      throw RuntimeFailure(label +
                           ": cannot read rank 0's membership secret: " + current_exception_text());
    }
  }
  listener.start(secret, me, world);

  // Every lower rank is dialled at once while the listener takes the higher ranks, so an
  // unreachable or silent peer costs the deadline once, not once per peer.
  std::vector<std::string> failures(world);
  std::vector<char> timed_out(world, 0);  // not vector<bool>: each dialling thread writes its own
  std::vector<int> sockets(world, -1);
  std::vector<std::thread> dialling;
  for (std::uint32_t peer = 0; peer < me; ++peer) {
    SocketAddress address;
    parse_socket_address(records[peer].listen_ip, records[peer].listen_port, &address);
    dialling.emplace_back([&, peer, address] {
      try {
        sockets[peer] = dial_member(address, me, peer, world, secret, deadline);
      } catch (const DeadlineExceeded& e) {
        timed_out[peer] = 1;
        failures[peer] = e.what();
      } catch (...) {
        failures[peer] = current_exception_text();
      }
    });
  }
  const std::vector<int> accepted = listener.wait_for_members(deadline);
  for (std::thread& t : dialling) t.join();
  for (std::uint32_t peer = me + 1; peer < world; ++peer) {
    sockets[peer] = accepted[peer];
    if (sockets[peer] < 0) {
      timed_out[peer] = 1;
      failures[peer] = "no connection";
    }
  }

  std::ostringstream text;
  bool all_timeouts = true, any = false;
  for (std::uint32_t peer = 0; peer < world; ++peer) {
    if (failures[peer].empty()) continue;
    const std::string who = "rank " + std::to_string(peer) + " (at " + records[peer].bound + ")";
    text << (any ? "; " : "");
    if (timed_out[peer]) {
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
  if (listener.refused() > 0) {
    // A stranger is never fatal, but never silent either.
    std::fprintf(stderr,
                 "reduce-verify: %s: refused %llu connection%s that did not prove membership "
                 "in this job (the first %s)\n",
                 label.c_str(), static_cast<unsigned long long>(listener.refused()),
                 listener.refused() == 1 ? "" : "s", listener.first_refusal().c_str());
  }
  if (any) {
    for (int fd : sockets) {
      if (fd >= 0) ::close(fd);
    }
    if (all_timeouts) throw DeadlineExceeded(label + ": " + text.str());
    throw RuntimeFailure(label + ": " + text.str());
  }
  for (std::uint32_t peer = 0; peer < world; ++peer) {
    if (peer == me) continue;
    try {
      pair_of[peer]->adopt(sockets[peer]);
      sockets[peer] = -1;
    } catch (...) {
      for (int fd : sockets) {
        if (fd >= 0) ::close(fd);
      }
      throw RuntimeFailure(label + ": " + current_exception_text());
    }
  }
  context->adopt(device, std::move(pairs));
  return context;
}

}  // namespace gloo_detail
}  // namespace rv
