#include "verify/common/output_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace rv {
namespace {

// Errors of the machine rather than of the path the user gave: exit 3, not 2 (DESIGN §6).
bool machine_error(int error) {
  return error == ENOSPC || error == EDQUOT || error == EIO || error == EFBIG || error == EPIPE ||
         error == ENOMEM || error == EMFILE || error == ENFILE;
}

[[noreturn]] void fail(const std::string& what, int error) {
  const std::string text = what + ": " + std::strerror(error);
  if (machine_error(error)) throw RuntimeFailure(text);
  throw InputError(text);
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string temporary_beside(const std::string& target) {
  static std::atomic<unsigned long> counter{0};
  const auto slash = target.rfind('/');
  const std::string name = slash == std::string::npos ? target : target.substr(slash + 1);
  return directory_of(target) + "/." + name + "." + std::to_string(::getpid()) + "." +
         std::to_string(counter++) + ".tmp";
}

// A name of one of this process's open files (/dev/stdout, /proc/self/fd/1): its link
// leads into /proc's descriptors, which no rename may replace, so it is written in place.
bool names_a_descriptor(const std::string& path) {
  for (const char* prefix : {"/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/"}) {
    if (path.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

struct Resolved {
  std::string target;  // the file written
  bool in_place = false;
  bool exists = false;
  mode_t mode = 0;
};

// Where an output to `path` goes (see output_file.h). `who` starts every message.
Resolved resolve(const std::string& path, const std::string& who) {
  if (path.empty()) throw InputError(who + "an empty path");
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISREG(info.st_mode) && !names_a_descriptor(path)) {
      char* real = ::realpath(path.c_str(), nullptr);
      if (real == nullptr) fail(who + path, errno);
      Resolved resolved{real, false, true, info.st_mode};
      std::free(real);
      return resolved;
    }
    if (S_ISREG(info.st_mode) || S_ISFIFO(info.st_mode) || S_ISCHR(info.st_mode)) {
      return {path, true, true, info.st_mode};
    }
    const char* kind = S_ISDIR(info.st_mode)    ? "a directory"
                       : S_ISBLK(info.st_mode)  ? "a block device"
                       : S_ISSOCK(info.st_mode) ? "a socket"
                                                : "not a regular file";
    throw InputError(who + path + ": is " + kind +
                     " (an output is a regular file, a FIFO or a character device)");
  }
  if (errno != ENOENT) fail(who + path, errno);
  // Missing, or a symlink whose target is missing: the name the chain of links ends at is
  // created, and the links stay.
  std::string name = path;
  for (int hops = 0; hops < 40; ++hops) {
    if (::lstat(name.c_str(), &info) != 0) {
      if (errno == ENOENT) return {name, false, false, 0};
      fail(who + path, errno);
    }
    if (!S_ISLNK(info.st_mode)) return {name, false, false, 0};
    char link[PATH_MAX];
    const ssize_t n = ::readlink(name.c_str(), link, sizeof link - 1);
    if (n < 0) fail(who + path, errno);
    const std::string to(link, static_cast<std::size_t>(n));
    name = to.front() == '/' ? to : directory_of(name) + "/" + to;
  }
  fail(who + path, ELOOP);
}

int create_temporary(const std::string& temporary, const std::string& what) {
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail(what, errno);
  return fd;
}

}  // namespace

void check_output_path(const std::string& path, const std::string& option) {
  const std::string who = option + " ";
  const Resolved resolved = resolve(path, who);
  if (resolved.in_place) {
    if (::access(resolved.target.c_str(), W_OK) != 0) fail(who + path + ": cannot write", errno);
    return;
  }
  const std::string dir = directory_of(resolved.target);
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) fail(who + path + ": its directory " + dir, errno);
  if (!S_ISDIR(info.st_mode)) throw InputError(who + path + ": " + dir + " is not a directory");
  // A real file created and removed again: permissions, a read-only filesystem, ACLs and
  // root all answer as the write at the end will.
  const std::string probe = temporary_beside(resolved.target);
  const int fd = create_temporary(probe, who + path + ": cannot create a file in " + dir);
  ::close(fd);
  ::unlink(probe.c_str());
}

OutputFile::OutputFile(const std::string& path) : path_(path) {
  const Resolved resolved = resolve(path, "");
  target_ = resolved.target;
  if (resolved.in_place) {
    fd_ = ::open(target_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd_ < 0) fail(path_ + ": cannot open", errno);
    return;
  }
  temporary_ = temporary_beside(target_);
  fd_ = create_temporary(temporary_, path_ + ": cannot create a file in " + directory_of(target_));
  // A replaced report keeps the permissions its owner gave it.
  if (resolved.exists) ::fchmod(fd_, resolved.mode & 07777);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

namespace {

// write(2) that reports a FIFO whose reader has gone as EPIPE instead of dying of SIGPIPE:
// the signal is blocked around the call and, when it came, taken off the pending set.
ssize_t write_without_sigpipe(int fd, const char* bytes, std::size_t size) {
  sigset_t pipe_only, previous;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &previous);
  const ssize_t n = ::write(fd, bytes, size);
  const int error = errno;
  if (n < 0 && error == EPIPE) {
    const timespec now{0, 0};
    ::sigtimedwait(&pipe_only, nullptr, &now);
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  errno = error;
  return n;
}

}  // namespace

void OutputFile::write(const void* bytes, std::size_t size) {
  const char* at = static_cast<const char*>(bytes);
  while (size > 0) {
    const ssize_t n = write_without_sigpipe(fd_, at, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path_ + ": write failed", errno);
    at += n;
    size -= static_cast<std::size_t>(n);
  }
}

void OutputFile::commit() {
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(path_ + ": write failed", errno);
  if (temporary_.empty()) return;
  if (::rename(temporary_.c_str(), target_.c_str()) != 0) {
    fail(path_ + ": cannot rename into place", errno);
  }
  temporary_.clear();
}

}  // namespace rv
