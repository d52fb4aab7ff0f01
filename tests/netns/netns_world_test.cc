// A world across hosts (issue 10, part 2): hosts made of network namespaces (netns_hosts.h),
// real `reduce-verify run` rank processes started in them the way a launcher would (our
// REDUCE_VERIFY_* variables, one job id, one rendezvous directory on the filesystem they
// share, --hostname = that host's address), Gloo over real TCP through a bridge. Proven here:
// - the gate passes across hosts: W = 4 as 2 hosts × 2 ranks, W = 8 as 4 × 2, all contracts;
// - a slow, lossy link changes no digest of any rank, contract or case;
// - a link cut mid-reduction, and a frozen host, end every rank with an error naming a peer
//   within --timeout + 2 s, and leave no process behind;
// - a rank's address is its own host's: a wrong --hostname (another host's address, the
//   loopback default across hosts, an address the peers cannot route to) is an error naming
//   the rank, exit 3, within the timeout.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "tests/netns/netns_hosts.h"
#include "tests/netns/rank_process.h"
#include "tests/support/process.h"
#include "tests/support/scratch_dir.h"

namespace rv::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kRanksPerHost = 2;
constexpr int kFaultTimeout = 3;  // the --timeout the fault tests give `run`, in seconds
constexpr auto kAllowed = std::chrono::milliseconds((kFaultTimeout + 2) * 1000);
const std::string kFaultTimeoutText = std::to_string(kFaultTimeout);

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Every test needs hosts; without CAP_NET_ADMIN (or `ip`) there are none to make.
class NetnsWorld : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = NetnsHosts::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << "network namespaces unavailable: " << why;
  }
};

// The committed suite's fixed-order and exact lines of world w whose N is in `counts`, as a
// golden file; *data_cases is how many fixed-order cases (each runs under three contracts).
std::string golden_for(const ScratchDir& dir, int w, const std::set<long>& counts,
                       std::size_t* data_cases) {
  std::ostringstream kept;
  *data_cases = 0;
  for (const char* file : {"fixed-order.xxh128", "exact.xxh128"}) {
    std::ifstream suite(std::string(RV_SOURCE_DIR) + "/golden/" + file);
    std::string line;
    while (std::getline(suite, line)) {
      if (line.empty() || line[0] == '#') continue;
      const long world = std::stol(line.substr(line.find(",w=") + 3));
      const long n = std::stol(line.substr(line.find(",n=") + 3));
      if (world != w || counts.count(n) == 0) continue;
      kept << line << "\n";
      if (line.find("contract=fixed-order") != std::string::npos) ++*data_cases;
    }
  }
  return dir.write("w" + std::to_string(w) + "-" + std::to_string(counts.size()) + ".xxh128",
                   kept.str());
}

// How each rank of a world is started: rank r runs on host r / kRanksPerHost with local rank
// r % kRanksPerHost; `hostname(r)` is its --hostname (nullopt: none, the default).
struct WorldLaunch {
  int world = 4;
  std::string job_id;
  std::vector<std::string> run_args;  // after `reduce-verify run`
  std::function<std::optional<std::string>(int rank)> hostname;
};

RankProcesses launch_world(const NetnsHosts& hosts, const ScratchDir& dir, const WorldLaunch& how) {
  const std::string root = dir.file("rendezvous");
  ::mkdir(root.c_str(), 0755);
  RankProcesses ranks;
  for (int r = 0; r < how.world; ++r) {
    const int host = r / kRanksPerHost;
    std::vector<std::string> command = {RV_TOOL_PATH, "run",          "--transport",
                                        "gloo",       "--rendezvous", root};
    const std::optional<std::string> hostname =
        how.hostname ? how.hostname(r) : std::optional<std::string>(hosts.address(host));
    if (hostname) command.insert(command.end(), {"--hostname", *hostname});
    command.insert(command.end(), how.run_args.begin(), how.run_args.end());
    const std::vector<std::string> env = {
        "REDUCE_VERIFY_RANK=" + std::to_string(r),
        "REDUCE_VERIFY_WORLD_SIZE=" + std::to_string(how.world),
        "REDUCE_VERIFY_LOCAL_RANK=" + std::to_string(r % kRanksPerHost),
        "REDUCE_VERIFY_JOB_ID=" + how.job_id};
    ranks.push_back(std::make_unique<RankProcess>(
        hosts.exec_in(host, command), env, dir.file(how.job_id + ".rank" + std::to_string(r))));
  }
  return ranks;
}

// Every process each host still holds, as text ("" when none).
std::string processes_left(const NetnsHosts& hosts) {
  std::string left;
  for (int h = 0; h < hosts.hosts(); ++h) {
    for (pid_t pid : hosts.processes(h)) {
      left += "host " + std::to_string(h) + ": pid " + std::to_string(pid) + "\n";
    }
  }
  return left;
}

std::string describe_ranks(const RankProcesses& ranks) {
  std::string text;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    text += "rank " + std::to_string(r) + ": " + ranks[r]->describe() + "\n" + ranks[r]->err();
  }
  return text;
}

// Rank 0 printed one line per case and contract, every fixed-order and exact result OK, every
// library-sum OK or DIFFERS (a float sum in Gloo's ring order; DESIGN §2.3), and 0 failed.
void expect_gate_passed(const RankProcess& rank0, std::size_t data_cases) {
  std::size_t lines = 0;
  std::istringstream out(rank0.out());
  std::string line;
  bool summary = false;
  while (std::getline(out, line)) {
    if (line.find(" passed, ") != std::string::npos) {
      EXPECT_NE(line.find(" passed, 0 failed"), std::string::npos) << line;
      summary = true;
      continue;
    }
    if (line.rfind("contract=", 0) != 0) continue;  // a note, e.g. how many library sums differ
    ++lines;
    const bool library_sum = line.rfind("contract=library-sum", 0) == 0;
    const bool ok = line.find(": OK ") != std::string::npos;
    const bool differs = line.find(": DIFFERS ") != std::string::npos;
    EXPECT_TRUE(ok || (library_sum && differs)) << line;
  }
  EXPECT_TRUE(summary) << rank0.out();
  EXPECT_EQ(lines, 3 * data_cases) << rank0.out();
}

// (case id, contract) → every rank's digest, from a report.
std::map<std::string, std::vector<std::string>> report_digests(const std::string& path) {
  std::map<std::string, std::vector<std::string>> digests;
  std::ifstream in(path);
  const nlohmann::json report = nlohmann::json::parse(in);
  for (const auto& result : report.at("results")) {
    std::vector<std::string>& ranks = digests[result.at("case").get<std::string>() + " under " +
                                              result.at("contract").get<std::string>()];
    for (const auto& rank : result.at("ranks"))
      ranks.push_back(rank.at("digest").get<std::string>());
  }
  return digests;
}

// A clean gate run over `hosts`; returns its report's path.
std::string run_gate(const NetnsHosts& hosts, const ScratchDir& dir, int world,
                     const std::string& golden, std::size_t data_cases, const std::string& job_id) {
  WorldLaunch how;
  how.world = world;
  how.job_id = job_id;
  const std::string report = dir.file(job_id + ".json");
  how.run_args = {"--golden", golden, "--contract", "all", "--timeout", "30", "--report", report};
  const auto start = Clock::now();
  RankProcesses ranks = launch_world(hosts, dir, how);
  EXPECT_TRUE(wait_for_all(ranks, 120s)) << describe_ranks(ranks);
  for (auto& rank : ranks) EXPECT_EQ(rank->exit_code(), 0) << describe_ranks(ranks);
  expect_gate_passed(*ranks[0], data_cases);
  std::printf("netns: %s: W = %d on %d hosts, %zu cases x 3 contracts in %.1f s\n", job_id.c_str(),
              world, hosts.hosts(), data_cases, seconds_between(start, Clock::now()));
  return report;
}

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

// Each rank of `ranks` (indices) ended with exit 3 within --timeout + 2 s of `fault`, and its
// message names a rank of `peers`.
void expect_named_in_time(const RankProcesses& ranks, const std::vector<int>& which,
                          const std::vector<int>& peers, Clock::time_point fault,
                          const std::string& what) {
  for (int r : which) {
    const RankProcess& rank = *ranks[r];
    ASSERT_TRUE(rank.ended()) << "rank " << r << " still runs after " << what << "\n"
                              << describe_ranks(ranks);
    EXPECT_EQ(rank.exit_code(), 3) << "rank " << r << ": " << rank.err();
    const double after = seconds_between(fault, rank.ended_at());
    EXPECT_LT(after, kFaultTimeout + 2.0)
        << "rank " << r << " ended " << after << " s after " << what << ": " << rank.err();
    // The message names a peer: "rank 2: no data …", "rank 3 did not arrive …", "rank 2 (at …"
    // (its own "on rank r of W" does not count).
    std::string text = rank.err();
    const std::string own = "on rank " + std::to_string(r) + " of ";
    for (std::size_t at; (at = text.find(own)) != std::string::npos;) text.erase(at, own.size());
    bool named = false;
    for (int p : peers) {
      if (p != r) named = named || text.find("rank " + std::to_string(p)) != std::string::npos;
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

// No --hostname: every rank binds the default, 127.0.0.1, which is a different loopback in
// each host. Every rank sees the others' records, refuses by name and says what to pass.
TEST_F(NetnsWorld, LoopbackDefaultAcrossHostsIsRefusedByEveryRank) {
  NetnsHosts hosts(2);
  ScratchDir dir;
  WorldLaunch how = short_world("loopback-default");
  how.hostname = [](int) { return std::nullopt; };
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
  std::printf("netns: loopback default: every rank refused within %.2f s: %s",
              seconds_between(start, ranks[3]->ended_at()), ranks[3]->err().c_str());
  EXPECT_EQ(processes_left(hosts), "");
}

// Rank 2 binds an address of its own host that host 0 has no route to. Host 0's ranks cannot
// connect to it and name it at once; rank 2 names the ranks that never connected to it; rank
// 3 loses its peers; all exit 3 within the timeout + 2 s.
TEST_F(NetnsWorld, AddressThePeersCannotReachIsNamed) {
  NetnsHosts hosts(2);
  ScratchDir dir;
  hosts.add_local_address(1, "10.9.0.2/32");
  WorldLaunch how = short_world("unreachable-address");
  how.hostname = [&](int r) { return r == 2 ? "10.9.0.2" : hosts.address(r / kRanksPerHost); };
  const auto start = Clock::now();
  RankProcesses ranks = launch_world(hosts, dir, how);
  EXPECT_TRUE(wait_for_all(ranks, kAllowed + 3s)) << describe_ranks(ranks);
  for (int r : {0, 1}) {
    const std::string err = ranks[r]->err();
    EXPECT_EQ(ranks[r]->exit_code(), 3) << err;
    EXPECT_NE(err.find("cannot connect to rank 2 (at [10.9.0.2]:"), std::string::npos) << err;
    EXPECT_NE(err.find("Network is unreachable"), std::string::npos) << err;
    EXPECT_NE(err.find("is that rank's --hostname an address"), std::string::npos) << err;
    EXPECT_LT(seconds_between(start, ranks[r]->ended_at()), 2.0) << err;
    std::printf("netns: an unreachable --hostname: rank %d ended %.2f s after the launch: %s", r,
                seconds_between(start, ranks[r]->ended_at()), err.c_str());
  }
  // Timed from the connection attempt that failed (rank 0's exit): rank 2's wait for the
  // connections that never come, and rank 3's for its lost peers, run from about then.
  expect_named_in_time(ranks, {2}, {0, 1}, ranks[0]->ended_at(),
                       "the failed connection (an unreachable --hostname on rank 2)");
  expect_named_in_time(ranks, {3}, {0, 1, 2}, ranks[0]->ended_at(),
                       "the failed connection (an unreachable --hostname on rank 2)");
  EXPECT_EQ(processes_left(hosts), "");
}

}  // namespace
}  // namespace rv::test
