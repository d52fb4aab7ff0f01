#include "core/launch/supervisor.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>  // sigabbrev_np

#include "core/deadline.h"
#include "core/error.h"
#include "core/launch/child_process.h"
#include "core/launch/signal_pipe.h"

namespace rv {
namespace {

using Clock = std::chrono::steady_clock;
using launch_detail::SignalPipe;
using std::chrono::milliseconds;

struct Child {
  pid_t pid = -1;
  bool live = false;
  bool signalled = false;
  int stop_signal = 0;  // the signal begin_stop sent (SIGTERM or the forwarded one)
  bool sent_kill = false;
};

// The world's state machine: which ranks are live, whether and since when it is stopping, and
// what each rank's end was. Driven by run_rank_processes on every wake-up of its SignalPipe.
class World {
 public:
  World(const RankProcessSpec& spec, const SignalPipe& signals, Clock::time_point start)
      : spec_(spec), signals_(signals), start_(start), children_(spec.world) {
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
    if (signals_.stop_signal() != 0 && outcome_.forwarded_signal == 0) {
      outcome_.forwarded_signal = signals_.stop_signal();
      begin_stop(signals_.stop_signal());
    }
    // A second Ctrl-C means now.
    if (signals_.stop_requests() > 1 && !killed_) kill_all();
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
  const SignalPipe& signals_;
  Clock::time_point start_;
  std::vector<Child> children_;
  WorldOutcome outcome_;
  bool stopping_ = false, killed_ = false;
  Clock::time_point stop_started_, kill_at_;
};

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

StopSignals::StopSignals() : pipe_(std::make_unique<SignalPipe>()) {}

StopSignals::~StopSignals() = default;

int StopSignals::stop_signal() const { return pipe_->stop_signal(); }

WorldOutcome run_rank_processes(const RankProcessSpec& spec) {
  const StopSignals signals;
  return run_rank_processes(spec, signals);
}

WorldOutcome run_rank_processes(const RankProcessSpec& spec, const StopSignals& stop_signals) {
  if (spec.argv.empty()) throw InputError("supervisor: no program to start for the ranks");
  RV_ENFORCE_GE(InputError, spec.world, 1u, "supervisor: a world has at least one rank");
  const std::string program = launch_detail::resolve_program(spec.argv[0]);
  std::vector<std::string> argv = spec.argv;
  // Every environment is built before the first fork (see child_process.h).
  std::vector<std::vector<std::string>> env;
  for (std::uint32_t r = 0; r < spec.world; ++r) {
    env.push_back(launch_detail::rank_environment(spec, r));
  }

  const SignalPipe& signals = stop_signals.pipe();
  World world(spec, signals, Clock::now());
  for (std::uint32_t r = 0; r < spec.world; ++r) {
    try {
      world.add(r, launch_detail::start_rank(program, argv, env[r], r));
    } catch (...) {
      world.abandon();
      throw;
    }
  }
  while (world.live_count() > 0) {
    world.reap();
    world.check_timers();
    if (world.live_count() == 0) break;
    signals.wait(world.next_wake());
  }
  return world.finish();
}

}  // namespace rv
