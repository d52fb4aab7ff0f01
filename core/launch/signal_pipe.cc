#include "core/launch/signal_pipe.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace rv::launch_detail {
namespace {

// The handler's whole state: the self-pipe and the signals that asked the supervisor to stop.
int g_wake_fd[2] = {-1, -1};
volatile sig_atomic_t g_stop_signal = 0;
volatile sig_atomic_t g_stop_requests = 0;
std::atomic<bool> g_active{false};

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

}  // namespace

SignalPipe::SignalPipe() {
  if (g_active.exchange(true)) {
    throw InternalError("run_rank_processes is already running in this process");
  }
  if (::pipe2(g_wake_fd, O_CLOEXEC | O_NONBLOCK) != 0) {
    g_active = false;
    throw RuntimeFailure(detail::concat("supervisor: pipe: ", std::strerror(errno)));
  }
  g_stop_signal = 0;
  g_stop_requests = 0;
  struct sigaction action {};
  action.sa_handler = on_supervisor_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (std::size_t i = 0; i < std::size(kSupervisorSignals); ++i) {
    ::sigaction(kSupervisorSignals[i], &action, &previous_[i]);
  }
}

SignalPipe::~SignalPipe() {
  for (std::size_t i = 0; i < std::size(kSupervisorSignals); ++i) {
    ::sigaction(kSupervisorSignals[i], &previous_[i], nullptr);
  }
  ::close(g_wake_fd[0]);
  ::close(g_wake_fd[1]);
  g_wake_fd[0] = g_wake_fd[1] = -1;
  g_active = false;
}

void SignalPipe::wait(std::chrono::milliseconds timeout) const {
  pollfd fd{g_wake_fd[0], POLLIN, 0};
  ::poll(&fd, 1, static_cast<int>(std::max<std::chrono::milliseconds::rep>(1, timeout.count())));
  char drain[64];
  while (::read(g_wake_fd[0], drain, sizeof drain) > 0) {
  }
}

int SignalPipe::stop_signal() const { return g_stop_signal; }

int SignalPipe::stop_requests() const { return g_stop_requests; }

}  // namespace rv::launch_detail
