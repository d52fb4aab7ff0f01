// Hosts made of Linux network namespaces, for testing a world that spans machines on one
// box: H "hosts", each a network namespace with one veth link into a bridge (the "switch",
// itself in a namespace of its own, so nothing of the box's own network is touched), every
// host with one address on 10.231.0.0/24. The filesystem stays shared, as an NFS mount
// would be, so a job directory under /tmp is seen by every host.
//
// Everything is made with iproute2's `ip` (and `tc`/`nft` for a bad link) and undone by the
// destructor: processes still inside a host are killed, the namespaces deleted (which deletes
// their links). Namespaces left by a test process that died are removed by the next one.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace rv::test {

class NetnsHosts {
 public:
  // Why this process cannot make network namespaces ("" when it can): no `ip`, or no
  // CAP_NET_ADMIN. Where the capability is present but creating one fails, the constructor
  // throws instead (a box that should run the test and cannot is a failure, not a skip).
  static std::string unavailable_reason();

  // Makes `hosts` hosts; throws std::runtime_error naming the command that failed.
  explicit NetnsHosts(int hosts);
  ~NetnsHosts();
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  int hosts() const { return static_cast<int>(names_.size()); }
  const std::string& name(int host) const { return names_.at(host); }  // the namespace
  // Host h's address: 10.231.0.(h + 1).
  std::string address(int host) const;

  // argv that runs `command` inside host h (`ip netns exec NS command...`; ip execs the
  // command, so the process started is the command itself).
  std::vector<std::string> exec_in(int host, const std::vector<std::string>& command) const;

  // Pulls host h's cable at the switch: its veth end in the bridge goes down.
  void cut_link(int host);

  // Makes host h's link slow and lossy in both directions: netem "delay 5ms loss 1%" where
  // the kernel has sch_netem; otherwise a token bucket at 200 Mbit/s (queueing delay) and a 1 %
  // random drop on both ends (nftables). Returns what was applied, or "" when neither is
  // possible, with the reason in *why_not.
  std::string impair_link(int host, std::string* why_not);

  // The packets impair_link's loss has dropped on host h's link so far (both ends).
  long dropped_on_link(int host) const;

  // Adds an extra address to host h's loopback device (an address only that host can reach).
  void add_local_address(int host, const std::string& cidr);

  // Replaces host h's address on its link with `cidr`, e.g. "10.232.0.2/24": a host whose only
  // network is one no other host is on (its frames still reach the bridge).
  void readdress_link(int host, const std::string& cidr);

  // The processes inside host h (`ip netns pids`).
  std::vector<pid_t> processes(int host) const;

 private:
  std::string prefix_;              // "rvnet-<pid>-"
  std::string switch_;              // the bridge's namespace
  std::vector<std::string> names_;  // the hosts' namespaces
};

}  // namespace rv::test
