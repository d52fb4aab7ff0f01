// What the netns world tests share: the fixture that skips without CAP_NET_ADMIN, the
// launch of a world's rank processes on the hosts, the gate's checks and the reports' digests.
#pragma once

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

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kRanksPerHost = 2;
constexpr int kFaultTimeout = 3;  // the --timeout the fault tests give `run`, in seconds
constexpr auto kAllowed = std::chrono::milliseconds((kFaultTimeout + 2) * 1000);
inline const std::string kFaultTimeoutText = std::to_string(kFaultTimeout);

inline double seconds_between(Clock::time_point from, Clock::time_point to) {
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
inline std::string golden_for(const ScratchDir& dir, int w, const std::set<long>& counts,
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
// r % kRanksPerHost; `hostname(r)` is its --hostname (nullopt: none, i.e. auto); without a
// `hostname`, every rank is given its host's address.
struct WorldLaunch {
  int world = 4;
  std::string job_id;
  std::vector<std::string> run_args;  // after `reduce-verify run`
  std::function<std::optional<std::string>(int rank)> hostname;
};

inline RankProcesses launch_world(const NetnsHosts& hosts, const ScratchDir& dir,
                                  const WorldLaunch& how) {
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
inline std::string processes_left(const NetnsHosts& hosts) {
  std::string left;
  for (int h = 0; h < hosts.hosts(); ++h) {
    for (pid_t pid : hosts.processes(h)) {
      left += "host " + std::to_string(h) + ": pid " + std::to_string(pid) + "\n";
    }
  }
  return left;
}

inline std::string describe_ranks(const RankProcesses& ranks) {
  std::string text;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    text += "rank " + std::to_string(r) + ": " + ranks[r]->describe() + "\n" + ranks[r]->err();
  }
  return text;
}

// Rank 0 printed one line per case and contract, every fixed-order and exact result OK, every
// library-sum OK or DIFFERS (a float sum in Gloo's ring order; DESIGN §2.3) or, for bf16/f16,
// SKIPPED naming Gloo, and 0 failed.
inline void expect_gate_passed(const RankProcess& rank0, std::size_t data_cases) {
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
    // A bf16/f16 library sum Gloo cannot do (no bf16 type; a defective f16 sum) is skipped
    // with its reason, never reduced another way (DESIGN §2.5).
    const bool half_skipped = line.find(",dtype=") != std::string::npos &&
                              line.find(": SKIPPED (gloo") != std::string::npos;
    EXPECT_TRUE(ok || (library_sum && (differs || half_skipped))) << line;
  }
  EXPECT_TRUE(summary) << rank0.out();
  EXPECT_EQ(lines, 3 * data_cases) << rank0.out();
}

// (case id, contract) → every rank's digest, from a report.
inline std::map<std::string, std::vector<std::string>> report_digests(const std::string& path) {
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

// A clean gate run over `hosts`; returns its report's path. `hostname` as in WorldLaunch
// (unset: each host's address).
inline std::string run_gate(const NetnsHosts& hosts, const ScratchDir& dir, int world,
                            const std::string& golden, std::size_t data_cases,
                            const std::string& job_id,
                            std::function<std::optional<std::string>(int rank)> hostname = {}) {
  WorldLaunch how;
  how.world = world;
  how.job_id = job_id;
  how.hostname = std::move(hostname);
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

}  // namespace rv::test
