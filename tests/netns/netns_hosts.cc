#include "tests/netns/netns_hosts.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/process.h"

namespace rv::test {
namespace {

constexpr const char* kPrefix = "rvnet-";
constexpr int kNetAdminBit = 12;  // CAP_NET_ADMIN

std::string ip_tool() {
  for (const std::string& candidate :
       {find_program("ip"), std::string("/usr/sbin/ip"), std::string("/sbin/ip")}) {
    if (!candidate.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string tool_path(const std::string& name) {
  for (const std::string& candidate : {find_program(name), "/usr/sbin/" + name, "/sbin/" + name}) {
    if (!candidate.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string joined(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& a : argv) text += (text.empty() ? "" : " ") + a;
  return text;
}

ProcessResult run_tool(const std::vector<std::string>& argv, const std::string& stdin_text = "") {
  ProcessOptions options;
  options.timeout_seconds = 20;
  options.stdin_text = stdin_text;
  return run_process(argv, options);
}

void must(const std::vector<std::string>& argv, const std::string& stdin_text = "") {
  const ProcessResult result = run_tool(argv, stdin_text);
  if (result.exit_code != 0) {
    throw std::runtime_error("netns set-up: `" + joined(argv) + "` failed (" + result.describe() +
                             "): " + result.err);
  }
}

bool has_net_admin() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      const unsigned long long caps = std::stoull(line.substr(7), nullptr, 16);
      return (caps >> kNetAdminBit) & 1u;
    }
  }
  return false;
}

std::vector<std::string> exec_in_namespace(const std::string& ns,
                                           const std::vector<std::string>& command) {
  std::vector<std::string> argv = {ip_tool(), "netns", "exec", ns};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::vector<pid_t> pids_in(const std::string& ns) {
  std::vector<pid_t> pids;
  const ProcessResult result = run_tool({ip_tool(), "netns", "pids", ns});
  std::istringstream lines(result.out);
  long pid = 0;
  while (lines >> pid) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

// Kills whatever still runs inside `ns` (processes the tests started there) and deletes it.
void remove_namespace(const std::string& ns) {
  for (int round = 0; round < 50; ++round) {
    const std::vector<pid_t> pids = pids_in(ns);
    if (pids.empty()) break;
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  run_tool({ip_tool(), "netns", "del", ns});
}

// Namespaces of earlier test processes that died before their destructor ran.
void remove_stale_namespaces() {
  const ProcessResult list = run_tool({ip_tool(), "netns", "list"});
  std::istringstream lines(list.out);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string ns = line.substr(0, line.find(' '));
    if (ns.rfind(kPrefix, 0) != 0) continue;
    const pid_t owner = static_cast<pid_t>(std::atol(ns.c_str() + std::string(kPrefix).size()));
    if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) remove_namespace(ns);
  }
}

}  // namespace

std::string NetnsHosts::unavailable_reason() {
  if (ip_tool().empty()) {
    return "no `ip` command (Debian iproute2; ci/install-deps.sh installs it)";
  }
  if (!has_net_admin()) {
    return "no CAP_NET_ADMIN: network namespaces need root (or the capability); CI runs as root";
  }
  return "";
}

NetnsHosts::NetnsHosts(int hosts)
    : prefix_(std::string(kPrefix) + std::to_string(::getpid()) + "-"), switch_(prefix_ + "sw") {
  remove_stale_namespaces();
  const std::string ip = ip_tool();
  try {
    must({ip, "netns", "add", switch_});
    must({ip, "-n", switch_, "link", "set", "lo", "up"});
    must({ip, "-n", switch_, "link", "add", "br0", "type", "bridge"});
    must({ip, "-n", switch_, "link", "set", "br0", "up"});
    for (int h = 0; h < hosts; ++h) {
      const std::string ns = prefix_ + "h" + std::to_string(h);
      must({ip, "netns", "add", ns});
      names_.push_back(ns);
      const std::string port = "vh" + std::to_string(h);
      must({ip, "-n", ns, "link", "set", "lo", "up"});
      must({ip, "-n", switch_, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns",
            ns});
      must({ip, "-n", switch_, "link", "set", port, "master", "br0", "up"});
      must({ip, "-n", ns, "addr", "add", address(h) + "/24", "dev", "eth0"});
      must({ip, "-n", ns, "link", "set", "eth0", "up"});
    }
    // Both ends up: wait for the carrier, so the first connection finds the link.
    for (int h = 0; h < hosts; ++h) {
      for (int tries = 0;; ++tries) {
        const ProcessResult link = run_tool({ip, "-n", names_[h], "link", "show", "eth0"});
        if (link.out.find("LOWER_UP") != std::string::npos) break;
        if (tries == 200)
          throw std::runtime_error("netns set-up: host " + std::to_string(h) +
                                   "'s link never came up: " + link.out);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  } catch (...) {
    for (const std::string& ns : names_) remove_namespace(ns);
    remove_namespace(switch_);
    throw;
  }
}

NetnsHosts::~NetnsHosts() {
  for (const std::string& ns : names_) remove_namespace(ns);
  remove_namespace(switch_);
}

std::string NetnsHosts::address(int host) const { return "10.231.0." + std::to_string(host + 1); }

std::vector<std::string> NetnsHosts::exec_in(int host,
                                             const std::vector<std::string>& command) const {
  return exec_in_namespace(name(host), command);
}

void NetnsHosts::cut_link(int host) {
  must({ip_tool(), "-n", switch_, "link", "set", "vh" + std::to_string(host), "down"});
}

std::string NetnsHosts::impair_link(int host, std::string* why_not) {
  const std::string ip = ip_tool(), tc = tool_path("tc"), nft = tool_path("nft");
  const std::string port = "vh" + std::to_string(host);
  // (namespace, device): the switch's end and the host's end of the link.
  const std::vector<std::pair<std::string, std::string>> ends = {{switch_, port},
                                                                 {name(host), "eth0"}};
  if (tc.empty()) {
    *why_not = "no `tc` command (Debian iproute2)";
    return "";
  }
  const ProcessResult netem = run_tool({tc, "-n", switch_, "qdisc", "add", "dev", port, "root",
                                        "netem", "delay", "5ms", "loss", "1%"});
  if (netem.exit_code == 0) {
    must({tc, "-n", name(host), "qdisc", "add", "dev", "eth0", "root", "netem", "delay", "5ms",
          "loss", "1%"});
    return "netem delay 5ms loss 1% on both ends of host " + std::to_string(host) + "'s link";
  }
  std::string reason =
      "this kernel has no sch_netem (tc: " + netem.err.substr(0, netem.err.find('\n')) + ")";
  if (nft.empty()) {
    *why_not = reason + ", and there is no `nft` (Debian nftables) for the fallback";
    return "";
  }
  for (const auto& [ns, device] : ends) {
    must({tc, "-n", ns, "qdisc", "add", "dev", device, "root", "tbf", "rate", "200mbit", "burst",
          "64kbit", "latency", "50ms"});
    must(exec_in_namespace(ns, {nft, "-f", "-"}),
         "table netdev rv_impair {\n  chain lossy {\n    type filter hook ingress device \"" +
             device +
             "\" priority 0; policy accept;\n    numgen random mod 100 < 1 counter drop\n  }\n}\n");
  }
  return reason +
         "; instead: tbf 200 Mbit/s (queueing delay) and a 1 % random drop (nftables) on "
         "both ends of host " +
         std::to_string(host) + "'s link";
}

long NetnsHosts::dropped_on_link(int host) const {
  const std::string ip = ip_tool(), tc = tool_path("tc"), nft = tool_path("nft");
  long dropped = 0;
  const std::vector<std::pair<std::string, std::string>> ends = {
      {switch_, "vh" + std::to_string(host)}, {name(host), "eth0"}};
  for (const auto& [ns, device] : ends) {
    // netem counts its drops in the qdisc statistics ("dropped N"); the fallback's nftables
    // rule in its counter ("counter packets N").
    if (!tc.empty()) {
      const std::string text = run_tool({tc, "-s", "-n", ns, "qdisc", "show", "dev", device}).out;
      if (text.find("netem") != std::string::npos) {
        const std::size_t at = text.find("dropped ");
        if (at != std::string::npos) dropped += std::atol(text.c_str() + at + 8);
      }
    }
    if (!nft.empty()) {
      const std::string text =
          run_tool(exec_in_namespace(ns, {nft, "list", "table", "netdev", "rv_impair"})).out;
      const std::size_t at = text.find("counter packets ");
      if (at != std::string::npos) dropped += std::atol(text.c_str() + at + 16);
    }
  }
  return dropped;
}

void NetnsHosts::add_local_address(int host, const std::string& cidr) {
  must({ip_tool(), "-n", name(host), "addr", "add", cidr, "dev", "lo"});
}

void NetnsHosts::readdress_link(int host, const std::string& cidr) {
  must({ip_tool(), "-n", name(host), "addr", "flush", "dev", "eth0"});
  must({ip_tool(), "-n", name(host), "addr", "add", cidr, "dev", "eth0"});
}

std::vector<pid_t> NetnsHosts::processes(int host) const { return pids_in(name(host)); }

}  // namespace rv::test
