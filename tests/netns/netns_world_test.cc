// A world across hosts (issue 10, part 2): hosts made of network namespaces (netns_hosts.h),
// real `reduce-verify run` rank processes started in them the way a launcher would (our
// REDUCE_VERIFY_* variables, one job id, one rendezvous directory on the filesystem they
// share, --hostname = that host's address), Gloo over real TCP through a bridge. Proven here:
// - the gate passes across hosts: W = 4 as 2 hosts × 2 ranks, W = 8 as 4 × 2, all contracts;
// - a slow, lossy link changes no digest of any rank, contract or case;
// - a link cut mid-reduction, and a frozen host, end every rank with an error naming a peer
//   within --timeout + 2 s, and leave no process behind;
// - without --hostname (auto) each rank finds its host's address: the gate passes with the
//   same digests as with explicit addresses; a host on a subnet no other host shares is an
//   error naming the rank, its place, its addresses and the places it cannot reach, exit 2;
// - a rank's address is its own host's: a wrong --hostname (another host's address, 127.0.0.1
//   across hosts, an address the peers cannot route to) is an error naming the rank, exit 3,
//   within the timeout.
// This file: the gate across hosts, with and without --hostname, and the slow, lossy link
// (netns_faults_test.cc: the rest).
#include "tests/netns/netns_world.h"

namespace rv::test {
namespace {

TEST_F(NetnsWorld, GatePassesWithFourRanksOnTwoHosts) {
  NetnsHosts hosts(2);
  ScratchDir dir;
  std::size_t cases = 0;
  const std::string golden = golden_for(dir, 4, {0, 1, 3, 1000, 4099, 65536}, &cases);
  ASSERT_GE(cases, 50u);
  run_gate(hosts, dir, 4, golden, cases, "gate-w4");
  EXPECT_EQ(processes_left(hosts), "");
}

TEST_F(NetnsWorld, GatePassesWithEightRanksOnFourHosts) {
  NetnsHosts hosts(4);
  ScratchDir dir;
  std::size_t cases = 0;
  const std::string golden = golden_for(dir, 8, {1, 3, 4099, 65536}, &cases);
  ASSERT_GE(cases, 40u);
  run_gate(hosts, dir, 8, golden, cases, "gate-w8");
  EXPECT_EQ(processes_left(hosts), "");
}

// No --hostname: the ranks agree on their addresses through the job directory. The hosts are
// two network namespaces, so 127.0.0.1 would be refused (the pair mesh's loopback check, see
// ExplicitLoopbackAcrossHostsIsRefusedByEveryRank): the gate passing proves each rank bound an
// address the other host reaches, and its digests are those of the explicit-address run.
TEST_F(NetnsWorld, NoHostnameFindsEachHostsAddressAndGivesTheSameDigests) {
  NetnsHosts hosts(2);
  ScratchDir dir;
  std::size_t cases = 0;
  const std::string golden = golden_for(dir, 4, {1, 1000, 65536}, &cases);
  ASSERT_GE(cases, 25u);
  const std::string explicit_report = run_gate(hosts, dir, 4, golden, cases, "explicit-w4");
  const std::string auto_report =
      run_gate(hosts, dir, 4, golden, cases, "auto-w4", [](int) { return std::nullopt; });
  ASSERT_FALSE(HasFailure()) << "a gate run failed: no digests to compare";
  const auto given = report_digests(explicit_report);
  const auto detected = report_digests(auto_report);
  EXPECT_EQ(given.size(), 3 * cases);
  EXPECT_EQ(given, detected) << "a digest differs between --hostname and auto";
  const ProcessResult compare =
      run_process({RV_TOOL_PATH, "compare", explicit_report, auto_report});
  EXPECT_EQ(compare.exit_code, 0) << compare.out << compare.err;
  EXPECT_EQ(processes_left(hosts), "");
}

// Latency and loss make TCP retransmit and deliver in other chunks and at other times; no
// bit of any result may change. The same cases run on a clean pair of hosts and on hosts
// whose link is impaired, and every rank's digest of every case and contract is compared.
TEST_F(NetnsWorld, ASlowLossyLinkChangesNoDigest) {
  ScratchDir dir;
  std::size_t cases = 0;
  const std::string golden = golden_for(dir, 4, {1000, 65536}, &cases);
  std::string impaired_report, applied, why_not;
  {
    NetnsHosts hosts(2);
    applied = hosts.impair_link(1, &why_not);
    if (applied.empty()) GTEST_SKIP() << "cannot impair a link here: " << why_not;
    std::printf("netns: impaired link: %s\n", applied.c_str());
    RecordProperty("impairment", applied);
    impaired_report = run_gate(hosts, dir, 4, golden, cases, "impaired-w4");
    const long dropped = hosts.dropped_on_link(1);
    std::printf("netns: the impaired link dropped %ld packets\n", dropped);
    EXPECT_GT(dropped, 0) << "no packet was lost: the run did not test loss";
  }
  std::string clean_report;
  {
    NetnsHosts hosts(2);
    clean_report = run_gate(hosts, dir, 4, golden, cases, "clean-w4");
  }
  const auto clean = report_digests(clean_report);
  const auto impaired = report_digests(impaired_report);
  EXPECT_EQ(clean.size(), 3 * cases);
  EXPECT_EQ(clean, impaired) << "a digest changed on the impaired link (" << applied << ")";
  const ProcessResult compare =
      run_process({RV_TOOL_PATH, "compare", clean_report, impaired_report});
  EXPECT_EQ(compare.exit_code, 0) << compare.out << compare.err;
}

// A long case, so that a fault lands mid-reduction: W = 4, 4 MB per rank, many iterations.

}  // namespace
}  // namespace rv::test
