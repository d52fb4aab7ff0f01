// The choice of a rank's Gloo bind address under `run --hostname auto`
// (core/transport/gloo/bind_address.h): pure, from the records the ranks publish.
#include "core/transport/gloo/bind_address.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace rv {
namespace {

std::uint32_t ip(unsigned a, unsigned b, unsigned c, unsigned d) {
  return (a << 24) | (b << 16) | (c << 8) | d;
}

InterfaceAddress on(const std::string& interface, std::uint32_t address, int prefix) {
  return {interface, address, prefix, false};
}

InterfaceAddress loopback() { return {"lo", ip(127, 0, 0, 1), 8, true}; }

BindCandidates rank_at(std::uint32_t rank, const std::string& place,
                       std::vector<InterfaceAddress> addresses) {
  BindCandidates record;
  record.rank = rank;
  record.place = "network boot/" + place;
  record.host = "box-" + place;
  record.addresses = std::move(addresses);
  return record;
}

std::string error_of(const std::vector<BindCandidates>& world, std::uint32_t rank) {
  try {
    choose_bind_address(world, rank);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(BindAddress, OnePlaceBindsLoopbackWhateverElseItHas) {
  const std::vector<InterfaceAddress> nics = {loopback(), on("eth0", ip(10, 231, 0, 1), 24)};
  const std::vector<BindCandidates> world = {rank_at(0, "a", nics), rank_at(1, "a", nics),
                                             rank_at(2, "a", nics)};
  for (std::uint32_t r = 0; r < 3; ++r) EXPECT_EQ(choose_bind_address(world, r), "127.0.0.1");
  // A world of one, and one with nothing but a loopback interface.
  EXPECT_EQ(choose_bind_address({rank_at(0, "a", {loopback()})}, 0), "127.0.0.1");
}

TEST(BindAddress, TwoPlacesSharingASlash24BindTheirOwnAddressOnIt) {
  const std::vector<BindCandidates> world = {
      rank_at(0, "a", {loopback(), on("eth0", ip(10, 231, 0, 1), 24)}),
      rank_at(1, "a", {loopback(), on("eth0", ip(10, 231, 0, 1), 24)}),
      rank_at(2, "b", {loopback(), on("eth0", ip(10, 231, 0, 2), 24)}),
      rank_at(3, "b", {loopback(), on("eth0", ip(10, 231, 0, 2), 24)})};
  EXPECT_EQ(choose_bind_address(world, 0), "10.231.0.1");
  EXPECT_EQ(choose_bind_address(world, 1), "10.231.0.1");
  EXPECT_EQ(choose_bind_address(world, 2), "10.231.0.2");
  EXPECT_EQ(choose_bind_address(world, 3), "10.231.0.2");
}

// Host a has a container bridge first (no other host is on it) and the cluster network second:
// the second is chosen. When host b is on the bridge's subnet too, both reach every place and
// the first published wins.
TEST(BindAddress, OnlyTheInterfaceEveryPlaceReachesIsChosen) {
  std::vector<BindCandidates> world = {
      rank_at(0, "a",
              {loopback(), on("docker0", ip(172, 17, 0, 1), 16), on("eth1", ip(10, 0, 8, 5), 22)}),
      rank_at(1, "b", {loopback(), on("eth0", ip(10, 0, 9, 200), 22)}),
      rank_at(2, "c", {on("ib0", ip(10, 0, 11, 7), 22), loopback()})};
  EXPECT_EQ(choose_bind_address(world, 0), "10.0.8.5");
  EXPECT_EQ(choose_bind_address(world, 1), "10.0.9.200");
  EXPECT_EQ(choose_bind_address(world, 2), "10.0.11.7");

  world = {rank_at(0, "a", {on("docker0", ip(172, 17, 0, 1), 16), on("eth1", ip(10, 0, 8, 5), 22)}),
           rank_at(1, "b", {on("eth0", ip(10, 0, 9, 200), 22), on("br", ip(172, 17, 3, 3), 16)})};
  EXPECT_EQ(choose_bind_address(world, 0), "172.17.0.1");
  EXPECT_EQ(choose_bind_address(world, 1), "10.0.9.200");
}

// Two addresses share a subnet when the longer prefix holds both; loopback addresses and an
// address equal to the other place's own never count.
TEST(BindAddress, WhatSharingASubnetMeans) {
  EXPECT_TRUE(share_subnet(on("a", ip(10, 0, 0, 1), 24), on("b", ip(10, 0, 0, 254), 24)));
  EXPECT_FALSE(share_subnet(on("a", ip(10, 0, 0, 1), 24), on("b", ip(10, 0, 1, 1), 24)));
  // 10.0.5.1/16 is on-link to 10.0.0.1/16's view, but not the other way round.
  EXPECT_FALSE(share_subnet(on("a", ip(10, 0, 0, 1), 16), on("b", ip(10, 0, 5, 1), 24)));
  EXPECT_TRUE(share_subnet(on("a", ip(10, 0, 5, 9), 16), on("b", ip(10, 0, 5, 1), 24)));
  EXPECT_FALSE(share_subnet(on("a", ip(10, 0, 0, 1), 24), on("b", ip(10, 0, 0, 1), 24)));

  // Both places have the same 127.0.0.1 and an extra address on lo in one subnet: loopback.
  const InterfaceAddress lo_extra_a{"lo", ip(10, 9, 0, 1), 24, true};
  const InterfaceAddress lo_extra_b{"lo", ip(10, 9, 0, 2), 24, true};
  const std::vector<BindCandidates> world = {rank_at(0, "a", {loopback(), lo_extra_a}),
                                             rank_at(1, "b", {loopback(), lo_extra_b})};
  EXPECT_NE(error_of(world, 0), "");
  // Two places whose only addresses are equal (two private networks numbered alike).
  const std::vector<BindCandidates> twins = {rank_at(0, "a", {on("eth0", ip(10, 0, 0, 1), 24)}),
                                             rank_at(1, "b", {on("eth0", ip(10, 0, 0, 1), 24)})};
  EXPECT_NE(error_of(twins, 1), "");
}

TEST(BindAddress, NoCommonSubnetNamesTheRankItsAddressesAndThePlacesItCannotReach) {
  const std::vector<BindCandidates> world = {
      rank_at(0, "a", {loopback(), on("eth0", ip(10, 231, 0, 1), 24)}),
      rank_at(1, "a", {loopback(), on("eth0", ip(10, 231, 0, 1), 24)}),
      rank_at(2, "b", {loopback(), on("eth0", ip(10, 232, 0, 2), 24)}),
      rank_at(3, "c", {on("eth0", ip(10, 231, 0, 3), 24)})};
  const std::string text = error_of(world, 2);
  for (const char* expected :
       {"rank 2 on network boot/b (host 'box-b')", "127.0.0.1/8 on lo (loopback)",
        "10.232.0.2/24 on eth0",
        "none shares a subnet with network boot/a (host 'box-a', ranks 0, 1: 10.231.0.1/24 on "
        "eth0); network boot/c (host 'box-c', rank 3: 10.231.0.3/24 on eth0)",
        "--hostname"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\nin: " << text;
  }
  // Ranks 0 and 3 reach each other, but not rank 2's place: they cannot choose either.
  EXPECT_NE(error_of(world, 0).find("rank 0 on network boot/a"), std::string::npos);
  EXPECT_NE(error_of(world, 0).find("none shares a subnet with network boot/b (host 'box-b', "
                                    "rank 2: 10.232.0.2/24 on eth0)"),
            std::string::npos)
      << error_of(world, 0);

  // Every other place is reached by some address, but none by one address.
  const std::vector<BindCandidates> split = {
      rank_at(0, "a", {on("eth0", ip(10, 1, 0, 1), 24), on("eth1", ip(10, 2, 0, 1), 24)}),
      rank_at(1, "b", {on("eth0", ip(10, 1, 0, 2), 24)}),
      rank_at(2, "c", {on("eth0", ip(10, 2, 0, 3), 24)})};
  EXPECT_NE(error_of(split, 0).find("each reaches only some of network boot/b"), std::string::npos)
      << error_of(split, 0);
}

TEST(BindAddress, RecordsMustBeOnePerRankInRankOrder) {
  const std::vector<BindCandidates> world = {rank_at(1, "a", {}), rank_at(0, "a", {})};
  EXPECT_THROW(choose_bind_address(world, 0), InputError);
  EXPECT_THROW(choose_bind_address({rank_at(0, "a", {})}, 1), InputError);
}

}  // namespace
}  // namespace rv
