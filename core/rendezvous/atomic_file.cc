#include "core/rendezvous/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace rv {
namespace {

[[noreturn]] void fail(const char* what, const std::string& path, int error) {
  throw RuntimeFailure(detail::concat("cannot ", what, " ", path, ": ", std::strerror(error)));
}

// A temporary name no other process or thread can pick: the pid and a per-process counter.
std::string temporary_beside(const std::string& path) {
  static std::atomic<unsigned long> counter{0};
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return detail::concat(dir, ".", name, ".", ::getpid(), ".", counter++, ".tmp");
}

void write_new_file(const std::string& path, const std::string& contents) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) fail("create", path, errno);
  // The umask can only take bits from open(2)'s mode; fchmod makes it exactly 0600 whatever
  // the umask, so no record of the job directory is ever writable by anyone else.
  if (::fchmod(fd, 0600) != 0) {
    const int error = errno;
    ::close(fd);
    ::unlink(path.c_str());
    fail("set the mode of", path, error);
  }
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      ::unlink(path.c_str());
      fail("write", path, error);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(path.c_str());
    fail("write", path, error);
  }
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string tmp = temporary_beside(path);
  write_new_file(tmp, contents);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    fail("rename into place", path, error);
  }
}

bool publish_file_exclusively(const std::string& path, const std::string& contents) {
  const std::string tmp = temporary_beside(path);
  write_new_file(tmp, contents);
  int result = ::link(tmp.c_str(), path.c_str());
  const int error = errno;
  // Over NFS a retransmitted link request can report EEXIST for a link that the first
  // request made: the temporary's link count tells (the open(2) man page's recipe).
  if (result != 0 && error == EEXIST) {
    struct stat info {};
    if (::stat(tmp.c_str(), &info) == 0 && info.st_nlink == 2) result = 0;
  }
  ::unlink(tmp.c_str());
  if (result == 0) return true;
  if (error == EEXIST) return false;
  fail("link into place", path, error);
}

std::optional<std::string> read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    fail("open", path, errno);
  }
  return read_to_end(fd, path);
}

std::string read_to_end(int fd, const std::string& path) {
  std::string contents;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      fail("read", path, error);
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return contents;
}

bool make_directory_exclusively(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0) {
    if (errno == EEXIST) return false;
    fail("create the directory", path, errno);
  }
  // As for files: 0700 exactly, whatever the umask.
  if (::chmod(path.c_str(), 0700) != 0) fail("set the mode of", path, errno);
  return true;
}

void make_directories(const std::string& path) {
  // Each missing component is created 0700; those that exist are left as they are.
  std::string prefix;
  std::size_t at = 0;
  while (at != std::string::npos) {
    const std::size_t slash = path.find('/', at + 1);
    prefix = path.substr(0, slash);
    at = slash;
    if (prefix.empty() || prefix == "/" || prefix.back() == '/') continue;
    struct stat info {};
    if (::stat(prefix.c_str(), &info) == 0) {
      if (!S_ISDIR(info.st_mode)) fail("create the directory", prefix, ENOTDIR);
      continue;
    }
    if (!make_directory_exclusively(prefix)) {
      if (::stat(prefix.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
        fail("create the directory", prefix, EEXIST);
      }
    }
  }
}

}  // namespace rv
