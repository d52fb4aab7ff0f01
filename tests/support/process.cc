#include "tests/support/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace rv::test {
namespace {

// Both ends close-on-exec: the child gets only the copies dup2'ed onto 0, 1 and 2, so a
// pipe held open by a sibling (another test thread's child) never delays our EOF.
struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    }
    read_end = fds[0];
    write_end = fds[1];
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (read_end >= 0) ::close(read_end);
    read_end = -1;
  }
  void close_write() {
    if (write_end >= 0) ::close(write_end);
    write_end = -1;
  }
};

std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const std::string key = text.substr(0, text.find('='));
    bool replaced = false;
    for (const std::string& add : extra) replaced = replaced || add.substr(0, add.find('=')) == key;
    if (!replaced) env.push_back(text);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

std::string ProcessResult::describe() const {
  std::ostringstream text;
  if (timed_out) {
    text << "killed after the timeout (" << seconds << " s)";
  } else if (term_signal != 0) {
    text << "signal " << term_signal << " (" << ::strsignal(term_signal) << ")";
  } else {
    text << "exit " << exit_code;
  }
  return text.str();
}

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t newline = text.find('\n', start);
    if (newline == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, newline - start));
    start = newline + 1;
  }
  return lines;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw std::runtime_error("run_process: empty argv");
  const std::string program = find_program(argv[0]);
  if (program.empty()) throw std::runtime_error("run_process: no program " + argv[0]);

  Pipe in, out, err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read_end, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.write_end, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write_end, STDERR_FILENO);

  std::vector<std::string> args = argv;
  std::vector<std::string> env = merged_environment(options.extra_env);
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(env);

  const auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  const int spawn_error =
      ::posix_spawn(&pid, program.c_str(), &actions, nullptr, c_args.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) {
    throw std::runtime_error("posix_spawn " + program + ": " + std::strerror(spawn_error));
  }
  in.close_read();
  out.close_write();
  err.close_write();

  // Feed stdin and drain both outputs in one poll loop: a child that fills one pipe while
  // we block on another would deadlock a sequential read.
  ProcessResult result;
  std::size_t stdin_written = 0;
  if (options.stdin_text.empty()) in.close_write();
  ::fcntl(in.write_end, F_SETFL, O_NONBLOCK);
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(options.timeout_seconds));
  while (out.read_end >= 0 || err.read_end >= 0) {
    std::vector<pollfd> fds;
    if (out.read_end >= 0) fds.push_back({out.read_end, POLLIN, 0});
    if (err.read_end >= 0) fds.push_back({err.read_end, POLLIN, 0});
    if (in.write_end >= 0) fds.push_back({in.write_end, POLLOUT, 0});
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    for (const pollfd& fd : fds) {
      if (fd.revents == 0) continue;
      if (fd.fd == in.write_end) {
        const ssize_t n = ::write(in.write_end, options.stdin_text.data() + stdin_written,
                                  options.stdin_text.size() - stdin_written);
        if (n > 0) stdin_written += static_cast<std::size_t>(n);
        if (n < 0 || stdin_written == options.stdin_text.size()) in.close_write();
        continue;
      }
      char buffer[65536];
      const ssize_t n = ::read(fd.fd, buffer, sizeof buffer);
      Pipe& pipe = fd.fd == out.read_end ? out : err;
      if (n > 0) {
        (fd.fd == out.read_end ? result.out : result.err)
            .append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        pipe.close_read();
      }
    }
  }
  in.close_write();

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  return result;
}

}  // namespace rv::test
