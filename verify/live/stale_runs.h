// What a supervisor killed with SIGKILL leaves behind: its rank processes die with it
// (PR_SET_PDEATHSIG, core/launch/supervisor.h), but its private rendezvous root and the job
// directories it made under a given --rendezvous stay. Each of them is marked, while the
// supervisor lives, by a sibling file `<name>.supervisor` holding the supervisor's pid, its
// start time and its host; a later supervisor on that host (or `run --clean`) removes every
// marked directory whose supervisor is gone, and nothing that carries no mark, another
// user's mark or another host's.
#pragma once

#include <string>
#include <vector>

namespace rv {

// Marks `dir` (which need not exist yet) as this process's for as long as it lives; the mark
// goes when it is destroyed (the directory is the owner's to remove).
class SupervisorMark {
 public:
  explicit SupervisorMark(const std::string& dir);
  ~SupervisorMark();
  SupervisorMark(const SupervisorMark&) = delete;
  SupervisorMark& operator=(const SupervisorMark&) = delete;

 private:
  std::string mark_;
};

// Removes, in `parent`, each marked directory (and its mark) whose supervisor no longer runs,
// of marks this user owns whose name starts with `prefix`. Returns the directories removed.
// Never throws: what cannot be read or removed is left.
std::vector<std::string> remove_stale_runs(const std::string& parent, const std::string& prefix);

}  // namespace rv
