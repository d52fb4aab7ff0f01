// Between arriving and connecting (core/transport/gloo/pair_mesh.h): a rank that dies after
// it arrived, one that publishes its pair addresses but never connects, one whose address
// refuses connections, and a loopback address in a world that spans two network namespaces.
// Each is named by rank within the timeout + 2 s. Gloo's own connectFullMesh held the first
// for a fixed 30 s (Store::kDefaultTimeout) and the second for 5 × the timeout.
#include <arpa/inet.h>
#include <gloo/rendezvous/hash_store.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/transport/gloo/gloo_rendezvous.h"
#include "core/transport/gloo/gloo_transport.h"
#include "core/transport/gloo/pair_mesh.h"
#include "core/transport/gloo/private_file_store.h"
#include "core/transport/membership/membership_secret.h"
#include "tests/support/scratch_dir.h"

namespace rv::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
constexpr auto kTimeout = 1000ms;
constexpr double kAllowedSeconds = 1.0 + 2.0;  // the timeout + 2 s

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void announce_arrival(gloo::rendezvous::Store& store, std::uint32_t rank) {
  const std::string text = std::to_string(rank);
  store.set(gloo_detail::arrival_key(rank), std::vector<char>(text.begin(), text.end()));
}

// A peer that arrived and published where its pairs listen (`ip`:`port`), and then does
// nothing more: dead, frozen, or on another network.
void publish_silent_peer(gloo::rendezvous::Store& store, std::uint32_t rank, std::uint32_t world,
                         const std::string& ip, std::uint16_t port, const std::string& network) {
  announce_arrival(store, rank);
  gloo_detail::MeshRecord record;
  record.rank = rank;
  record.world = world;
  record.bound = "[" + ip + "]:" + std::to_string(port);
  record.loopback = ip.rfind("127.", 0) == 0;
  record.host = "silent-peer";
  record.network = network;
  record.listen_ip = ip;
  record.listen_port = std::to_string(port);
  if (rank == 0) {  // rank 0 sets the job's secret before it arrives
    store.set(gloo_detail::membership_secret_key(),
              membership::encode_secret(membership::draw_secret()));
  }
  store.set(gloo_detail::mesh_record_key(rank), gloo_detail::encode_mesh_record(record));
}

// A port of 127.0.0.1 on which nothing listens.
std::uint16_t closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof in;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&in), sizeof in), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&in), &length), 0);
  ::close(fd);
  return ntohs(in.sin_port);
}

GlooConnectOptions rank_options(std::uint32_t rank, std::uint32_t world, const std::string& ip) {
  GlooConnectOptions options;
  options.rank = rank;
  options.world = world;
  options.hostname = ip;
  options.timeout = kTimeout;
  return options;
}

// Rank 0 arrived and died: rank 1 used to wait in Gloo's Store::get for rank 0's host name,
// 30 s whatever the timeout.
TEST(GlooConnectDeadline, RankThatDiesAfterArrivingIsNamedWithinTheTimeout) {
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  announce_arrival(*store, 0);
  const auto start = Clock::now();
  try {
    connect_gloo_with_store(store, rank_options(1, 2, "127.0.0.1"));
    FAIL() << "connected to a dead rank";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "rank 0 arrived but published no pair addresses within 1 s (died or froze"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(seconds_since(start), kAllowedSeconds);
  EXPECT_GE(seconds_since(start), 0.9);
}

// The same through the file store of a job directory, the store live ranks use.
TEST(GlooConnectDeadline, FileStoreRankThatDiesAfterArrivingIsNamedWithinTheTimeout) {
  ScratchDir dir;
  {
    gloo_detail::PrivateFileStore store(dir.path());
    announce_arrival(store, 0);
  }
  GlooConnectOptions options = rank_options(1, 2, "127.0.0.1");
  options.store_dir = dir.path();
  const auto start = Clock::now();
  try {
    connect_gloo(options);
    FAIL() << "connected to a dead rank";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 arrived but published no pair addresses"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(dir.path()), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(start), kAllowedSeconds);
}

// Rank 1 published its address and froze before connecting. The higher rank dials, so we
// wait for a connection that never comes, which Gloo's pairs would have waited for 5 × the
// timeout.
TEST(GlooConnectDeadline, PeerThatNeverConnectsIsNamedWithinTheTimeout) {
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  publish_silent_peer(*store, 1, 2, "127.0.0.2", 9, gloo_detail::network_identity());
  const auto start = Clock::now();
  try {
    connect_gloo_with_store(store, rank_options(0, 2, "127.0.0.1"));
    FAIL() << "connected to a silent rank";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 (at [127.0.0.2]:9) did not connect within 1 s"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(seconds_since(start), kAllowedSeconds);
  EXPECT_GE(seconds_since(start), 0.9);
}

// Every silent peer is waited for at once: three of them cost the timeout once, not 3 times.
TEST(GlooConnectDeadline, SilentPeersAreWaitedForTogether) {
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  for (std::uint32_t r = 1; r < 4; ++r) {
    publish_silent_peer(*store, r, 4, "127.0.0." + std::to_string(r + 1), 9,
                        gloo_detail::network_identity());
  }
  const auto start = Clock::now();
  try {
    connect_gloo_with_store(store, rank_options(0, 4, "127.0.0.1"));
    FAIL() << "connected to silent ranks";
  } catch (const DeadlineExceeded& e) {
    for (std::uint32_t r = 1; r < 4; ++r) {
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(r) + " (at [127.0.0." +
                                           std::to_string(r + 1) + "]:9) did not connect"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_LT(seconds_since(start), kAllowedSeconds);
}

// Rank 0's address refuses connections (a wrong --hostname, or the rank is gone); the higher
// rank of a pair dials the lower, so we are the connecting side and learn it at once.
TEST(GlooConnectDeadline, PeerWhoseAddressRefusesIsNamedAtOnce) {
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  const std::uint16_t port = closed_port();
  publish_silent_peer(*store, 0, 2, "127.0.0.1", port, gloo_detail::network_identity());
  const auto start = Clock::now();
  try {
    connect_gloo_with_store(store, rank_options(1, 2, "127.0.0.2"));
    FAIL() << "connected to a closed port";
  } catch (const DeadlineExceeded& e) {
    FAIL() << "a refused connection waited for the deadline: " << e.what();
  } catch (const RuntimeFailure& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("cannot connect to rank 0 (at [127.0.0.1]:" + std::to_string(port) + ")"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("Connection refused"), std::string::npos) << text;
    EXPECT_NE(text.find("--hostname"), std::string::npos) << text;
  }
  EXPECT_LT(seconds_since(start), 0.9);
}

// A peer in another network namespace (or on another machine) can never reach our loopback
// address: refused by name before any connection is tried.
TEST(GlooConnectDeadline, LoopbackInAWorldAcrossNetworksIsRefused) {
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  publish_silent_peer(*store, 1, 2, "10.1.2.3", 9, "another-boot/4026531999");
  const auto start = Clock::now();
  try {
    connect_gloo_with_store(store, rank_options(0, 2, "127.0.0.1"));
    FAIL() << "connected with a loopback address across networks";
  } catch (const DeadlineExceeded& e) {
    FAIL() << e.what();
  } catch (const RuntimeFailure& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("rank 0 binds a loopback address ([127.0.0.1]:"), std::string::npos)
        << text;
    EXPECT_NE(text.find("the world spans 2 of them"), std::string::npos) << text;
    EXPECT_NE(text.find("rank 1 on network another-boot/4026531999"), std::string::npos) << text;
    EXPECT_NE(text.find("give each rank --hostname"), std::string::npos) << text;
  }
  EXPECT_LT(seconds_since(start), 0.9);
}

// The other side of the rule: loopback is fine when every rank shares one network namespace.
TEST(GlooConnectDeadline, NetworkIdentityNamesThisNamespace) {
  const std::string identity = gloo_detail::network_identity();
  ASSERT_FALSE(identity.empty()) << "no /proc here";
  EXPECT_EQ(identity, gloo_detail::network_identity());
  EXPECT_NE(identity.find('/'), std::string::npos) << identity;
}

}  // namespace
}  // namespace rv::test
