// A world across hosts under faults (netns_world_test.cc has the whole list): a link cut
// mid-reduction, a frozen host, --hostname values that are not the rank's own host's, and
// hosts that no address detected without --hostname can join.
#include "tests/netns/netns_world.h"

namespace rv::test {
namespace {

WorldLaunch long_world(const std::string& job_id) {
  WorldLaunch how;
  how.world = 4;
  how.job_id = job_id;
  how.run_args = {
      "--case",     "contract=fixed-order,op=sum,w=4,n=1000003,dist=normal,seed=7,gen=1",
      "--contract", "fixed-order",
      "--iters",    "1000",
      "--timeout",  kFaultTimeoutText};
  return how;
}

// Returns once the world's ranks have been reducing for a while (the job directory's `ready`
// marks the end of the rendezvous; then they connect, agree and start), or fails.
::testing::AssertionResult reducing(const ScratchDir& dir, const std::string& job_id,
                                    RankProcesses& ranks) {
  const std::string ready = dir.file("rendezvous/" + job_id + "/ready");
  const auto give_up = Clock::now() + 30s;
  struct stat info {};
  while (::stat(ready.c_str(), &info) != 0) {
    for (auto& rank : ranks) {
      if (rank->poll()) {
        return ::testing::AssertionFailure()
               << "a rank ended before the fault: " << describe_ranks(ranks);
      }
    }
    if (Clock::now() > give_up) return ::testing::AssertionFailure() << "no `ready` in 30 s";
    std::this_thread::sleep_for(10ms);
  }
  std::this_thread::sleep_for(1500ms);
  for (auto& rank : ranks) {
    if (rank->poll()) {
      return ::testing::AssertionFailure()
             << "a rank ended before the fault: " << describe_ranks(ranks);
    }
  }
  return ::testing::AssertionSuccess();
}

// Whether rank r's error names one of `peers` ("rank 2: no data …", "rank 3 did not arrive
// …", "rank 2 (at …"; its own "on rank r of W" does not count).
bool names_one_of(const RankProcess& rank, int r, const std::vector<int>& peers) {
  std::string text = rank.err();
  const std::string own = "on rank " + std::to_string(r) + " of ";
  for (std::size_t at; (at = text.find(own)) != std::string::npos;) text.erase(at, own.size());
  for (int p : peers) {
    if (p != r && text.find("rank " + std::to_string(p)) != std::string::npos) return true;
  }
  return false;
}

// Every rank of `which` ended with exit 3 within --timeout + 2 s of the fault, naming one of
// `peers`, or naming another rank of `which` whose own error names one of them: a rank stuck
// waiting on a silent peer before posting its receive for our bytes is the one our wait ran
// out on (docs/DESIGN.md §5.6), and its error then names the silent peer.
void expect_named_in_time(const RankProcesses& ranks, const std::vector<int>& which,
                          const std::vector<int>& peers, Clock::time_point fault,
                          const std::string& what) {
  for (int r : which) {
    const RankProcess& rank = *ranks[r];
    ASSERT_TRUE(rank.ended()) << "rank " << r << " still runs after " << what << "\n"
                              << describe_ranks(ranks);
  }
  for (int r : which) {
    const RankProcess& rank = *ranks[r];
    EXPECT_EQ(rank.exit_code(), 3) << "rank " << r << ": " << rank.err();
    const double after = seconds_between(fault, rank.ended_at());
    EXPECT_LT(after, kFaultTimeout + 2.0)
        << "rank " << r << " ended " << after << " s after " << what << ": " << rank.err();
    bool named = names_one_of(rank, r, peers);
    for (int s : which) {
      named = named || (s != r && names_one_of(rank, r, {s}) && names_one_of(*ranks[s], s, peers));
    }
    EXPECT_TRUE(named) << "rank " << r << " names none of the ranks it should: " << rank.err();
    std::printf("netns: %s: rank %d ended (%s) %.2f s after it: %s", what.c_str(), r,
                rank.describe().c_str(), after, rank.err().c_str());
  }
}

// The cable of host 1 is pulled mid-reduction: every rank, on both sides, must end by itself
// with a named error within --timeout + 2 s; nothing may stay behind in either host.
TEST_F(NetnsWorld, LinkCutMidReductionEndsEveryRankInTime) {
  NetnsHosts hosts(2);
  ScratchDir dir;
  RankProcesses ranks = launch_world(hosts, dir, long_world("link-cut"));
  ASSERT_TRUE(reducing(dir, "link-cut", ranks));
  hosts.cut_link(1);
  const auto cut = Clock::now();
  EXPECT_TRUE(wait_for_all(ranks, kAllowed + 3s)) << describe_ranks(ranks);
  expect_named_in_time(ranks, {0, 1}, {2, 3}, cut, "the link cut");
  expect_named_in_time(ranks, {2, 3}, {0, 1}, cut, "the link cut");
  EXPECT_EQ(processes_left(hosts), "");
}

// Host 1 freezes (every rank in it SIGSTOPped): the ranks of host 0 name one of its ranks
// within --timeout + 2 s. Then host 1 thaws: its ranks find their peers gone and end too,
// within the same bound; nothing stays behind.
TEST_F(NetnsWorld, FrozenHostIsNamedAndThawedRanksEndToo) {
  NetnsHosts hosts(2);
  ScratchDir dir;
  RankProcesses ranks = launch_world(hosts, dir, long_world("frozen-host"));
  ASSERT_TRUE(reducing(dir, "frozen-host", ranks));
  const std::vector<pid_t> frozen = hosts.processes(1);
  ASSERT_EQ(frozen.size(), 2u);
  for (pid_t pid : frozen) ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  const auto freeze = Clock::now();
  const auto give_up = freeze + kAllowed + 3s;
  for (;;) {
    const bool first = ranks[0]->poll(), second = ranks[1]->poll();
    if ((first && second) || Clock::now() > give_up) break;
    std::this_thread::sleep_for(5ms);
  }
  expect_named_in_time(ranks, {0, 1}, {2, 3}, freeze, "the freeze of host 1");
  for (const std::string& line :
       std::vector<std::string>{"within " + kFaultTimeoutText + " s", "peer dead or frozen"}) {
    EXPECT_NE(ranks[0]->err().find(line), std::string::npos) << ranks[0]->err();
  }

  for (pid_t pid : frozen) ASSERT_EQ(::kill(pid, SIGCONT), 0);
  const auto thaw = Clock::now();
  EXPECT_TRUE(wait_for_all(ranks, kAllowed + 3s)) << describe_ranks(ranks);
  // A thawed rank names whichever peer its deadline (passed while it was stopped) or a closed
  // connection shows first: one of host 0's ranks, or its frozen neighbour.
  expect_named_in_time(ranks, {2, 3}, {0, 1, 2, 3}, thaw, "the thaw of host 1");
  EXPECT_EQ(processes_left(hosts), "");
}

// A small world for the address tests: one short case.
WorldLaunch short_world(const std::string& job_id) {
  WorldLaunch how;
  how.world = 4;
  how.job_id = job_id;
  how.run_args = {"--case",     "contract=fixed-order,op=sum,w=4,n=4099,dist=normal,seed=7,gen=1",
                  "--contract", "fixed-order",
                  "--timeout",  kFaultTimeoutText};
  return how;
}

// Rank 3, on host 1, is given host 0's address: it cannot bind it, says so and exits 3 at once;
// its peers name it as the rank that never arrived.
TEST_F(NetnsWorld, AnotherHostsAddressIsRefusedByTheRankGivenIt) {
  NetnsHosts hosts(2);
  ScratchDir dir;
  WorldLaunch how = short_world("foreign-address");
  how.hostname = [&](int r) { return hosts.address(r == 3 ? 0 : r / kRanksPerHost); };
  const auto start = Clock::now();
  RankProcesses ranks = launch_world(hosts, dir, how);
  EXPECT_TRUE(wait_for_all(ranks, kAllowed + 3s)) << describe_ranks(ranks);
  ASSERT_TRUE(ranks[3]->ended());
  EXPECT_EQ(ranks[3]->exit_code(), 3) << ranks[3]->err();
  EXPECT_NE(ranks[3]->err().find("gloo rendezvous on rank 3 of 4"), std::string::npos)
      << ranks[3]->err();
  EXPECT_NE(ranks[3]->err().find("cannot create a TCP device on '" + hosts.address(0) +
                                 "' (--hostname must be an address or name of this host)"),
            std::string::npos)
      << ranks[3]->err();
  EXPECT_LT(seconds_between(start, ranks[3]->ended_at()), 2.0);
  std::printf("netns: a foreign --hostname: rank 3 ended %.2f s after the launch: %s",
              seconds_between(start, ranks[3]->ended_at()), ranks[3]->err().c_str());
  // Timed from rank 3's exit: the others' arrival deadline runs from about then.
  expect_named_in_time(ranks, {0, 1, 2}, {3}, ranks[3]->ended_at(),
                       "rank 3's exit (a foreign --hostname)");
  EXPECT_NE(ranks[0]->err().find("rank 3 did not arrive within " + kFaultTimeoutText + " s"),
            std::string::npos)
      << ranks[0]->err();
  EXPECT_EQ(processes_left(hosts), "");
}

// --hostname 127.0.0.1 on every rank, which is a different loopback in each host. Every rank
// sees the others' records, refuses by name and says what to pass.
TEST_F(NetnsWorld, ExplicitLoopbackAcrossHostsIsRefusedByEveryRank) {
  NetnsHosts hosts(2);
  ScratchDir dir;
  WorldLaunch how = short_world("loopback-explicit");
  how.hostname = [](int) { return std::string("127.0.0.1"); };
  const auto start = Clock::now();
  RankProcesses ranks = launch_world(hosts, dir, how);
  EXPECT_TRUE(wait_for_all(ranks, kAllowed + 3s)) << describe_ranks(ranks);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    ASSERT_TRUE(ranks[r]->ended());
    EXPECT_EQ(ranks[r]->exit_code(), 3) << ranks[r]->err();
    const std::string err = ranks[r]->err();
    EXPECT_NE(err.find("ranks 0, 1, 2, 3 bind a loopback address ([127.0.0.1]:"), std::string::npos)
        << err;
    EXPECT_NE(err.find("the world spans 2 of them"), std::string::npos) << err;
    EXPECT_NE(err.find("give each rank --hostname"), std::string::npos) << err;
    EXPECT_LT(seconds_between(start, ranks[r]->ended_at()), kFaultTimeout + 2.0) << err;
  }
  std::printf("netns: --hostname 127.0.0.1: every rank refused within %.2f s: %s",
              seconds_between(start, ranks[3]->ended_at()), ranks[3]->err().c_str());
  EXPECT_EQ(processes_left(hosts), "");
}

// No --hostname, and host 1's only network is a subnet host 0 is not on: no address of either
// host reaches the other. Every rank refuses at once (exit 2, bad input), naming itself, its
// place and addresses, and the other host's place and addresses, and says to pass --hostname.
TEST_F(NetnsWorld, NoHostnameWithoutACommonSubnetIsRefusedByEveryRank) {
  NetnsHosts hosts(2);
  ScratchDir dir;
  hosts.readdress_link(1, "10.232.0.2/24");
  WorldLaunch how = short_world("no-common-subnet");
  how.hostname = [](int) { return std::nullopt; };
  const auto start = Clock::now();
  RankProcesses ranks = launch_world(hosts, dir, how);
  EXPECT_TRUE(wait_for_all(ranks, kAllowed + 3s)) << describe_ranks(ranks);
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(ranks[r]->ended());
    const std::string err = ranks[r]->err();
    EXPECT_EQ(ranks[r]->exit_code(), 2) << err;
    const bool on_host_0 = r / kRanksPerHost == 0;
    for (const std::string& expected :
         {"bind address (--hostname auto): rank " + std::to_string(r) + " on network ",
          std::string("127.0.0.1/8 on lo (loopback)"),
          std::string(on_host_0 ? "10.231.0.1/24 on eth0; none shares a subnet with network "
                                : "10.232.0.2/24 on eth0; none shares a subnet with network "),
          std::string(on_host_0 ? "ranks 2, 3: 10.232.0.2/24 on eth0)"
                                : "ranks 0, 1: 10.231.0.1/24 on eth0)"),
          std::string("Pass each rank --hostname")}) {
      EXPECT_NE(err.find(expected), std::string::npos) << expected << "\nin: " << err;
    }
    EXPECT_LT(seconds_between(start, ranks[r]->ended_at()), 2.0) << err;
  }
  std::printf("netns: no common subnet: every rank refused within %.2f s: %s",
              seconds_between(start, ranks[3]->ended_at()), ranks[3]->err().c_str());
  EXPECT_EQ(processes_left(hosts), "");
}

// Rank 1 binds an address of its own host that host 1 has no route to. The higher rank of a
// pair dials the lower (docs/DESIGN.md §10), so host 1's ranks cannot connect to it and name
// it at once; rank 1 names the ranks that never connected to it; rank 0 loses its peers; all
// exit 3 within the timeout + 2 s.
TEST_F(NetnsWorld, AddressThePeersCannotReachIsNamed) {
  NetnsHosts hosts(2);
  ScratchDir dir;
  hosts.add_local_address(0, "10.9.0.1/32");
  WorldLaunch how = short_world("unreachable-address");
  how.hostname = [&](int r) { return r == 1 ? "10.9.0.1" : hosts.address(r / kRanksPerHost); };
  const auto start = Clock::now();
  RankProcesses ranks = launch_world(hosts, dir, how);
  EXPECT_TRUE(wait_for_all(ranks, kAllowed + 3s)) << describe_ranks(ranks);
  for (int r : {2, 3}) {
    const std::string err = ranks[r]->err();
    EXPECT_EQ(ranks[r]->exit_code(), 3) << err;
    EXPECT_NE(err.find("cannot connect to rank 1 (at [10.9.0.1]:"), std::string::npos) << err;
    EXPECT_NE(err.find("Network is unreachable"), std::string::npos) << err;
    EXPECT_NE(err.find("is that rank's --hostname an address"), std::string::npos) << err;
    EXPECT_LT(seconds_between(start, ranks[r]->ended_at()), 2.0) << err;
    std::printf("netns: an unreachable --hostname: rank %d ended %.2f s after the launch: %s", r,
                seconds_between(start, ranks[r]->ended_at()), err.c_str());
  }
  // Timed from the connection attempt that failed (rank 2's exit): rank 1's wait for the
  // connections that never come, and rank 0's for its lost peers, run from about then.
  expect_named_in_time(ranks, {1}, {2, 3}, ranks[2]->ended_at(),
                       "the failed connection (an unreachable --hostname on rank 1)");
  expect_named_in_time(ranks, {0}, {1, 2, 3}, ranks[2]->ended_at(),
                       "the failed connection (an unreachable --hostname on rank 1)");
  EXPECT_EQ(processes_left(hosts), "");
}

}  // namespace
}  // namespace rv::test
