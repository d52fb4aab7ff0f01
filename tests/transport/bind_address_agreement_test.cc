// `run --hostname auto`: the ranks' agreement on their bind addresses through a shared folder
// (core/transport/gloo/bind_address_agreement.h), a thread per rank; the places and addresses are
// given, so worlds that span hosts are played on one.
#include "core/transport/gloo/bind_address_agreement.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include "core/error.h"
#include "core/transport/gloo/host_interfaces.h"
#include "tests/support/scratch_dir.h"

namespace rv {
namespace {

using namespace std::chrono_literals;

BindCandidates rank_at(std::uint32_t rank, const std::string& place, std::uint32_t address) {
  BindCandidates record;
  record.rank = rank;
  record.place = "network " + place;
  record.host = "box";
  record.addresses = {{"lo", 0x7F000001u, 8, true}, {"eth0", address, 24, false}};
  return record;
}

// Runs one agreement per record, each on its own thread; returns each rank's address or the
// text of its error.
std::vector<std::string> agree_all(const std::string& dir,
                                   const std::vector<BindCandidates>& world) {
  std::vector<std::string> outcome(world.size());
  std::vector<std::thread> ranks;
  for (std::uint32_t r = 0; r < world.size(); ++r) {
    ranks.emplace_back([&, r] {
      BindAddressAgreementOptions options;
      options.dir = dir;
      options.rank = r;
      options.world = static_cast<std::uint32_t>(world.size());
      options.timeout = 10s;
      try {
        outcome[r] = agree_bind_address(options, world[r]);
      } catch (const Error& error) {
        outcome[r] = std::string("error: ") + error.what();
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  return outcome;
}

TEST(BindAddressAgreement, RanksOfThisProcessShareOnePlaceAndBindLoopback) {
  test::ScratchDir dir;
  const BindCandidates here = local_bind_candidates(0);
  EXPECT_FALSE(here.place.empty());
  bool has_loopback = false;
  for (const InterfaceAddress& address : here.addresses) {
    if (address.address == 0x7F000001u) has_loopback = address.loopback;
  }
  EXPECT_TRUE(has_loopback) << "127.0.0.1 is not listed as a loopback address";
  std::vector<BindCandidates> world;
  for (std::uint32_t r = 0; r < 3; ++r) world.push_back(local_bind_candidates(r));
  EXPECT_EQ(agree_all(dir.path(), world), std::vector<std::string>(3, "127.0.0.1"));
}

TEST(BindAddressAgreement, RanksOnTwoHostsEachBindTheirOwnAddress) {
  test::ScratchDir dir;
  const std::vector<BindCandidates> world = {
      rank_at(0, "a", 0x0AE70001u), rank_at(1, "a", 0x0AE70001u),  // 10.231.0.1
      rank_at(2, "b", 0x0AE70002u), rank_at(3, "b", 0x0AE70002u)};
  EXPECT_EQ(agree_all(dir.path(), world),
            (std::vector<std::string>{"10.231.0.1", "10.231.0.1", "10.231.0.2", "10.231.0.2"}));
}

// Rank 2 alone on its own subnet: it refuses, and so does every other rank (none reaches
// rank 2's place), each naming that place, at once.
TEST(BindAddressAgreement, ARankOnASubnetOfItsOwnIsRefusedByEveryRank) {
  test::ScratchDir dir;
  const std::vector<BindCandidates> world = {rank_at(0, "a", 0x0AE70001u),
                                             rank_at(1, "b", 0x0AE70002u),
                                             rank_at(2, "c", 0x0AE80003u)};  // 10.232.0.3
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> outcome = agree_all(dir.path(), world);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(outcome[2].find("error: bind address (--hostname auto): rank 2 on network c"),
            std::string::npos)
      << outcome[2];
  for (std::uint32_t r : {0u, 1u}) {
    EXPECT_NE(outcome[r].find("none shares a subnet with network c (host 'box', rank 2: "
                              "10.232.0.3/24 on eth0)"),
              std::string::npos)
        << outcome[r];
  }
  for (std::uint32_t r : {0u, 1u, 2u}) {
    EXPECT_NE(outcome[r].find("--hostname"), std::string::npos) << outcome[r];
  }
}

// Rank 0 could bind 10.0.0.1, which both other places reach; but places b and c number their
// hosts alike (10.0.0.2 each), so neither reaches the other. Rank 0 refuses too, naming rank 1,
// instead of connecting and waiting out its deadline for ranks that never arrive.
TEST(BindAddressAgreement, ARankWhoseOwnChoiceWorksStillRefusesAPeerThatHasNone) {
  test::ScratchDir dir;
  const std::vector<BindCandidates> world = {
      rank_at(0, "a", 0x0A000001u), rank_at(1, "b", 0x0A000002u), rank_at(2, "c", 0x0A000002u)};
  const std::vector<std::string> outcome = agree_all(dir.path(), world);
  EXPECT_NE(outcome[0].find("error: bind address (--hostname auto): rank 1 on network b"),
            std::string::npos)
      << outcome[0];
  EXPECT_NE(outcome[1].find("rank 1 on network b"), std::string::npos) << outcome[1];
  EXPECT_NE(outcome[2].find("rank 2 on network c"), std::string::npos) << outcome[2];
}

TEST(BindAddressAgreement, MissingRanksAreNamedWhenTheTimeoutPasses) {
  test::ScratchDir dir;
  BindAddressAgreementOptions options;
  options.dir = dir.path();
  options.rank = 1;
  options.world = 4;
  options.timeout = 200ms;
  const auto start = std::chrono::steady_clock::now();
  try {
    agree_bind_address(options, rank_at(1, "a", 0x0AE70001u));
    FAIL() << "no error";
  } catch (const DeadlineExceeded& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("on rank 1 of 4"), std::string::npos) << text;
    EXPECT_NE(text.find("ranks 0, 2, 3 published no addresses within 0.2 s"), std::string::npos)
        << text;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(BindAddressAgreement, ARecordThisToolDidNotWriteIsNamed) {
  test::ScratchDir dir;
  std::ofstream(dir.file("rank-0")) << "reduce-verify bind candidates 1\nrank 0\nplace x\n";
  BindAddressAgreementOptions options;
  options.dir = dir.path();
  options.rank = 1;
  options.world = 2;
  options.timeout = 2s;
  try {
    agree_bind_address(options, rank_at(1, "a", 0x0AE70001u));
    FAIL() << "no error";
  } catch (const DeadlineExceeded& error) {
    FAIL() << error.what();
  } catch (const RuntimeFailure& error) {
    EXPECT_NE(std::string(error.what()).find(dir.file("rank-0") + " is not a record"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace rv
