#include "core/launch/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>

#include "core/deadline.h"
#include "core/error.h"
#include "core/launch/launcher_env.h"

extern char** environ;

namespace rv {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The handlers' whole state: a self-pipe that wakes the supervisor's poll (a signal arriving
// just before poll leaves a byte, so no wake-up is lost), and the signals that asked the
// supervisor to stop.
int g_wake_fd[2] = {-1, -1};
volatile sig_atomic_t g_stop_signal = 0;
volatile sig_atomic_t g_stop_requests = 0;
std::atomic<bool> g_supervising{false};

extern "C" void on_supervisor_signal(int signal) {
  const int saved_errno = errno;
  if (signal == SIGINT || signal == SIGTERM) {
    if (g_stop_signal == 0) g_stop_signal = signal;
    g_stop_requests = g_stop_requests + 1;
  }
  const char byte = 0;
  [[maybe_unused]] const ssize_t n = ::write(g_wake_fd[1], &byte, 1);
  errno = saved_errno;
}

constexpr int kHandledSignals[] = {SIGCHLD, SIGINT, SIGTERM};

// Installs the handlers and the self-pipe for the duration of one world; restores the
// caller's handlers after.
class SignalScope {
 public:
  SignalScope() {
    if (g_supervising.exchange(true)) {
      throw InternalError("run_rank_processes is already running in this process");
    }
    if (::pipe2(g_wake_fd, O_CLOEXEC | O_NONBLOCK) != 0) {
      g_supervising = false;
      throw RuntimeFailure(detail::concat("supervisor: pipe: ", std::strerror(errno)));
    }
    g_stop_signal = 0;
    g_stop_requests = 0;
    struct sigaction action {};
    action.sa_handler = on_supervisor_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (std::size_t i = 0; i < std::size(kHandledSignals); ++i) {
      ::sigaction(kHandledSignals[i], &action, &previous_[i]);
    }
  }
  ~SignalScope() {
    for (std::size_t i = 0; i < std::size(kHandledSignals); ++i) {
      ::sigaction(kHandledSignals[i], &previous_[i], nullptr);
    }
    ::close(g_wake_fd[0]);
    ::close(g_wake_fd[1]);
    g_wake_fd[0] = g_wake_fd[1] = -1;
    g_supervising = false;
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  // Waits for a signal (or until `timeout`), then empties the pipe.
  static void wait(milliseconds timeout) {
    pollfd fd{g_wake_fd[0], POLLIN, 0};
    ::poll(&fd, 1, static_cast<int>(std::max<milliseconds::rep>(1, timeout.count())));
    char drain[64];
    while (::read(g_wake_fd[0], drain, sizeof drain) > 0) {
    }
  }

 private:
  struct sigaction previous_[std::size(kHandledSignals)];
};

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

// Each rank's complete environment, built before any fork: after fork in a process that may
// have threads, the child may only call async-signal-safe functions (no allocation).
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

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct Child {
  pid_t pid = -1;
  bool live = false;
  bool signalled = false;
  int stop_signal = 0;  // the signal begin_stop sent (SIGTERM or the forwarded one)
  bool sent_kill = false;
};

class World {
 public:
  World(const RankProcessSpec& spec, Clock::time_point start)
      : spec_(spec), start_(start), children_(spec.world) {
    outcome_.exits.resize(spec.world);
    for (std::uint32_t r = 0; r < spec.world; ++r) outcome_.exits[r].rank = r;
  }

  void add(std::uint32_t rank, pid_t pid) {
    children_[rank] = Child{pid, true, false, 0, false};
    outcome_.exits[rank].pid = pid;
  }

  std::size_t live_count() const {
    return static_cast<std::size_t>(
        std::count_if(children_.begin(), children_.end(), [](const Child& c) { return c.live; }));
  }

  // Collects every child that has ended; the first failure starts the stop. The whole pass
  // comes first, so ranks that ended on their own at the same moment are reported as they
  // ended, not as stopped by the supervisor.
  void reap() {
    bool failed = false;
    for (std::uint32_t r = 0; r < children_.size(); ++r) {
      Child& child = children_[r];
      if (!child.live) continue;
      int status = 0;
      const pid_t done = ::waitpid(child.pid, &status, WNOHANG);
      if (done != child.pid) continue;
      child.live = false;
      RankExit& ended = outcome_.exits[r];
      ended.exited = WIFEXITED(status);
      ended.code = ended.exited ? WEXITSTATUS(status) : 0;
      ended.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      // Signalled by us, and not ended by some other signal of its own (a crash that raced
      // the supervisor's SIGTERM is the rank's own failure).
      ended.killed_by_us = child.signalled && (ended.exited || ended.signal == child.stop_signal ||
                                               (child.sent_kill && ended.signal == SIGKILL));
      ended.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start_);
      if (!ended.ok() && !ended.killed_by_us && !outcome_.first_failure) {
        outcome_.first_failure = ended;
        failed = true;
      }
    }
    if (failed) begin_stop(SIGTERM);
  }

  // Everything that is not a child's end: forwarded signals, the deadline, the grace period.
  void check_timers() {
    const auto now = Clock::now();
    if (g_stop_signal != 0 && outcome_.forwarded_signal == 0) {
      outcome_.forwarded_signal = g_stop_signal;
      begin_stop(g_stop_signal);
    }
    // A second Ctrl-C means now.
    if (g_stop_requests > 1 && !killed_) kill_all();
    if (spec_.deadline.count() > 0 && !stopping_ && now - start_ >= spec_.deadline) {
      outcome_.deadline_passed = true;
      begin_stop(SIGTERM);
    }
    if (stopping_ && !killed_ && now >= kill_at_) kill_all();
  }

  // How long the supervisor may sleep before a timer needs it.
  milliseconds next_wake() const {
    const auto now = Clock::now();
    auto until = now + milliseconds(100);
    if (stopping_ && !killed_) until = std::min(until, kill_at_);
    if (spec_.deadline.count() > 0 && !stopping_) until = std::min(until, start_ + spec_.deadline);
    return std::chrono::duration_cast<milliseconds>(until - now) + milliseconds(1);
  }

  // SIGTERM (or the forwarded signal) then SIGCONT, so a stopped rank acts on it too.
  void begin_stop(int signal) {
    if (stopping_) return;
    stopping_ = true;
    stop_started_ = Clock::now();
    kill_at_ = stop_started_ + spec_.grace;
    for (Child& child : children_) {
      if (!child.live) continue;
      child.signalled = true;
      child.stop_signal = signal;
      ::kill(child.pid, signal);
      ::kill(child.pid, SIGCONT);
    }
  }

  void kill_all() {
    stopping_ = true;
    killed_ = true;
    for (Child& child : children_) {
      if (!child.live) continue;
      child.signalled = true;
      child.sent_kill = true;
      ::kill(child.pid, SIGKILL);
    }
  }

  // Stops and reaps the whole world, for the error paths (a rank that cannot be started).
  void abandon() {
    kill_all();
    for (Child& child : children_) {
      if (!child.live) continue;
      int status = 0;
      while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
      }
      child.live = false;
    }
  }

  WorldOutcome finish() {
    if (stopping_) {
      outcome_.stop_time = std::chrono::duration_cast<milliseconds>(Clock::now() - stop_started_);
    }
    return outcome_;
  }

 private:
  const RankProcessSpec& spec_;
  Clock::time_point start_;
  std::vector<Child> children_;
  WorldOutcome outcome_;
  bool stopping_ = false, killed_ = false;
  Clock::time_point stop_started_, kill_at_;
};

// The child's side, between fork and exec: async-signal-safe calls only.
[[noreturn]] void become_rank(const char* program, char* const* argv, char* const* envp,
                              pid_t supervisor, int exec_error_fd) {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int signal : kHandledSignals) ::sigaction(signal, &default_action, nullptr);
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

// Forks one rank and waits until it has exec'd (the exec-error pipe closes on exec) or
// failed to (the child writes errno to it).
pid_t start_rank(const std::string& program, std::vector<char*>& argv, std::vector<char*>& envp,
                 std::uint32_t rank) {
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
    become_rank(program.c_str(), argv.data(), envp.data(), supervisor, exec_error[1]);
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

std::string how_it_ended(const RankExit& ended) {
  if (ended.exited) return detail::concat("exited with code ", ended.code);
  return detail::concat("was killed by signal ", ended.signal, " (", signal_name(ended.signal),
                        ")");
}

}  // namespace

std::string signal_name(int signal) {
  if (const char* abbrev = ::sigabbrev_np(signal)) return std::string("SIG") + abbrev;
  return detail::concat("signal ", signal);
}

bool WorldOutcome::ok() const {
  if (exits.empty() || deadline_passed || forwarded_signal != 0) return false;
  return std::all_of(exits.begin(), exits.end(), [](const RankExit& e) { return e.ok(); });
}

std::string WorldOutcome::describe() const {
  if (ok()) return detail::concat("all ", exits.size(), " ranks exited 0");
  std::vector<std::string> parts;
  if (first_failure) {
    parts.push_back(
        detail::concat("rank ", first_failure->rank, " ", how_it_ended(*first_failure)));
  } else if (deadline_passed) {
    parts.push_back("the deadline passed");
  } else if (forwarded_signal != 0) {
    parts.push_back(detail::concat("the supervisor received ", signal_name(forwarded_signal)));
  }
  std::vector<std::uint32_t> stopped, clean;
  for (const RankExit& ended : exits) {
    if (first_failure && ended.rank == first_failure->rank) continue;
    // A rank the supervisor signalled that still ended with an ended code (it handled or
    // ignored the SIGTERM) is reported by its code, like any other.
    if (ended.killed_by_us && !ended.exited) {
      stopped.push_back(ended.rank);
    } else if (ended.ok()) {
      clean.push_back(ended.rank);
    } else {
      parts.push_back(detail::concat("rank ", ended.rank, " ", how_it_ended(ended)));
    }
  }
  if (!clean.empty()) parts.push_back(ranks_text(clean) + " exited 0");
  if (!stopped.empty()) parts.push_back(ranks_text(stopped) + " stopped by the supervisor");
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : "; ") + part;
  return text;
}

WorldOutcome run_rank_processes(const RankProcessSpec& spec) {
  if (spec.argv.empty()) throw InputError("supervisor: no program to start for the ranks");
  RV_ENFORCE_GE(InputError, spec.world, 1u, "supervisor: a world has at least one rank");
  const std::string program = resolve_program(spec.argv[0]);
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<std::vector<std::string>> env_strings;
  for (std::uint32_t r = 0; r < spec.world; ++r) env_strings.push_back(rank_environment(spec, r));

  SignalScope signals;
  World world(spec, Clock::now());
  for (std::uint32_t r = 0; r < spec.world; ++r) {
    std::vector<char*> envp = pointers(env_strings[r]);
    try {
      world.add(r, start_rank(program, argv, envp, r));
    } catch (...) {
      world.abandon();
      throw;
    }
  }
  while (world.live_count() > 0) {
    world.reap();
    world.check_timers();
    if (world.live_count() == 0) break;
    SignalScope::wait(world.next_wake());
  }
  return world.finish();
}

}  // namespace rv
