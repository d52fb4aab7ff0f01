#include "verify/live/stale_runs.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/rendezvous/atomic_file.h"

namespace rv {
namespace {

constexpr const char* kMarkSuffix = ".supervisor";

// Field 22 of /proc/<pid>/stat (the start time in clock ticks since boot): with the pid it
// names one process, so a recycled pid is not taken for the supervisor. "" when none runs.
std::string start_time_of(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return "";
  const auto paren = text.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return "";
  std::istringstream fields(text.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return field;
  }
  return "";
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

bool supervisor_runs(const std::string& mark_text) {
  std::istringstream in(mark_text);
  long pid = 0;
  std::string start, host;
  if (!(in >> pid >> start >> host) || pid <= 0) return true;  // unreadable: not ours to judge
  // A root shared between hosts: another host's pids say nothing here.
  if (host != host_name()) return true;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  const std::string now = start_time_of(pid);
  return now.empty() || now == start;
}

}  // namespace

SupervisorMark::SupervisorMark(const std::string& dir) : mark_(dir + kMarkSuffix) {
  const long pid = static_cast<long>(::getpid());
  write_file_atomically(mark_,
                        std::to_string(pid) + " " + start_time_of(pid) + " " + host_name() + "\n");
}

SupervisorMark::~SupervisorMark() { ::unlink(mark_.c_str()); }

std::vector<std::string> remove_stale_runs(const std::string& parent, const std::string& prefix) {
  std::vector<std::string> removed;
  DIR* dir = ::opendir(parent.c_str());
  if (dir == nullptr) return removed;
  std::vector<std::string> marks;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    const std::string suffix = kMarkSuffix;
    if (name.size() > suffix.size() && name.rfind(prefix, 0) == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      marks.push_back(name);
    }
  }
  ::closedir(dir);
  for (const std::string& name : marks) {
    const std::string mark = parent + "/" + name;
    struct stat info {};
    if (::lstat(mark.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != ::geteuid()) {
      continue;
    }
    std::optional<std::string> text;
    try {
      text = read_small_file(mark);
    } catch (...) {
      continue;
    }
    if (!text || supervisor_runs(*text)) continue;
    const std::string owned = mark.substr(0, mark.size() - std::string(kMarkSuffix).size());
    std::error_code ignored;
    std::filesystem::remove_all(owned, ignored);
    ::unlink(mark.c_str());
    removed.push_back(owned);
  }
  return removed;
}

}  // namespace rv
