#include "core/launch/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/launch/signal_pipe.h"
#include "core/rendezvous/launcher_env.h"

extern char** environ;

namespace rv::launch_detail {
namespace {

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The child's side, between fork and exec: async-signal-safe calls only.
[[noreturn]] void become_rank(const char* program, char* const* argv, char* const* envp,
                              pid_t supervisor, int exec_error_fd) {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int signal : kSupervisorSignals) ::sigaction(signal, &default_action, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The supervisor may have died before prctl took effect: then no SIGKILL will come.
  if (::getppid() != supervisor) ::_exit(127);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(program, argv, envp);
  const int error = errno;
  [[maybe_unused]] const ssize_t n = ::write(exec_error_fd, &error, sizeof error);
  ::_exit(127);
}

}  // namespace

std::string resolve_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  throw RuntimeFailure(
      detail::concat("supervisor: cannot start ranks: ", program, " is not an executable in PATH"));
}

std::vector<std::string> rank_environment(const RankProcessSpec& spec, std::uint32_t rank) {
  std::vector<std::pair<std::string, std::string>> added = spec.env;
  added.emplace_back(kRankVariable, std::to_string(rank));
  added.emplace_back(kWorldSizeVariable, std::to_string(spec.world));
  added.emplace_back(kLocalRankVariable, std::to_string(rank));
  std::set<std::string> replaced;
  for (const auto& [name, value] : added) replaced.insert(name);
  std::vector<std::string> env;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string text(*entry);
    if (replaced.count(text.substr(0, text.find('='))) == 0) env.push_back(text);
  }
  // A later duplicate in `added` wins, as with setenv.
  std::vector<std::pair<std::string, std::string>> last;
  for (const auto& item : added) {
    last.erase(std::remove_if(last.begin(), last.end(),
                              [&](const auto& other) { return other.first == item.first; }),
               last.end());
    last.push_back(item);
  }
  for (const auto& [name, value] : last) env.push_back(name + "=" + value);
  return env;
}

pid_t start_rank(const std::string& program, std::vector<std::string>& argv,
                 std::vector<std::string>& env, std::uint32_t rank) {
  std::vector<char*> argv_pointers = pointers(argv);
  std::vector<char*> env_pointers = pointers(env);
  int exec_error[2];
  if (::pipe2(exec_error, O_CLOEXEC) != 0) {
    throw RuntimeFailure(detail::concat("supervisor: pipe: ", std::strerror(errno)));
  }
  // All signals blocked across fork, so the child cannot run the supervisor's handlers
  // before it has reset them.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t supervisor = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(exec_error[0]);
    become_rank(program.c_str(), argv_pointers.data(), env_pointers.data(), supervisor,
                exec_error[1]);
  }
  const int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(exec_error[1]);
  if (pid < 0) {
    ::close(exec_error[0]);
    throw RuntimeFailure(detail::concat("supervisor: cannot start rank ", rank,
                                        ": fork: ", std::strerror(fork_error)));
  }
  int error = 0;
  ssize_t n;
  while ((n = ::read(exec_error[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  ::close(exec_error[0]);
  if (n == static_cast<ssize_t>(sizeof error)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw RuntimeFailure(detail::concat("supervisor: cannot start rank ", rank, ": exec ", program,
                                        ": ", std::strerror(error)));
  }
  return pid;
}

}  // namespace rv::launch_detail
