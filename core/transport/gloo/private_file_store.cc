#include "core/transport/gloo/private_file_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "core/deadline.h"
#include "core/error.h"
#include "core/rendezvous/private_directory.h"

namespace rv {
namespace gloo_detail {
namespace {

// Keys name files: letters, digits, '-' and '_' stay, every other byte is "%XX", so that two
// keys never share a file and none is "." or "..".
std::string file_name_of(const std::string& key) {
  std::string name;
  for (unsigned char c : key) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_') {
      name += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      name += hex;
    }
  }
  return name;
}

[[noreturn]] void fail(const std::string& what, const std::string& path, int error) {
  throw RuntimeFailure(
      detail::concat("gloo store: cannot ", what, " ", path, ": ", std::strerror(error)));
}

void write_all(int fd, const std::vector<char>& data, const std::string& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write", path, errno);
    done += static_cast<std::size_t>(n);
  }
}

// The file's contents if it exists and is this user's own; nullopt if it does not exist.
std::optional<std::vector<char>> read_own_file(const std::string& path, const std::string& key) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP) {
      throw RuntimeFailure(detail::concat("gloo store: ", path, " (key '", key,
                                          "') is a symbolic link: refused (planted by another "
                                          "user?)"));
    }
    fail("open", path, errno);
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    fail("stat", path, error);
  }
  if (!S_ISREG(info.st_mode) || info.st_uid != ::geteuid() || (info.st_mode & 022) != 0) {
    ::close(fd);
    throw RuntimeFailure(detail::concat(
        "gloo store: ", path, " (key '", key, "') belongs to uid ", info.st_uid, " with mode ",
        mode_text(static_cast<unsigned>(info.st_mode)), ", not to this job's user (uid ",
        ::geteuid(), ") alone: refused (forged by another user?)"));
  }
  std::vector<char> data;
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
    data.insert(data.end(), buffer, buffer + n);
  }
  ::close(fd);
  return data;
}

}  // namespace

PrivateFileStore::PrivateFileStore(std::string dir) : dir_(std::move(dir)) {
  require_private_directory(dir_, "the gloo store");
}

std::string PrivateFileStore::path_of(const std::string& key) const {
  return dir_ + "/" + file_name_of(key);
}

void PrivateFileStore::set(const std::string& key, const std::vector<char>& data) {
  static std::atomic<unsigned long> counter{0};
  const std::string path = path_of(key);
  const std::string tmp = detail::concat(dir_, "/.tmp.", ::getpid(), ".", counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) fail("create", tmp, errno);
  try {
    // open(2)'s mode passes through the umask, which may take bits away but never adds
    // any: fchmod makes it exactly 0600 either way.
    if (::fchmod(fd, 0600) != 0) fail("set the mode of", tmp, errno);
    write_all(fd, data, tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    fail("write", tmp, error);
  }
  const int linked = ::link(tmp.c_str(), path.c_str());
  const int error = errno;
  ::unlink(tmp.c_str());
  if (linked != 0 && error == EEXIST) {
    throw RuntimeFailure(detail::concat("gloo store: the key '", key, "' is set already (", path,
                                        "): a stale or reused job directory, or two "
                                        "processes started as one rank?"));
  }
  if (linked != 0) fail("link into place", path, error);
}

bool PrivateFileStore::has(const std::string& key) const {
  struct stat info {};
  const std::string path = path_of(key);
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return false;
    fail("stat", path, errno);
  }
  return read_own_file(path, key).has_value();
}

std::vector<char> PrivateFileStore::get(const std::string& key) {
  wait({key}, kDefaultTimeout);
  const auto data = read_own_file(path_of(key), key);
  if (!data) fail("read", path_of(key), ENOENT);
  return *data;
}

void PrivateFileStore::wait(const std::vector<std::string>& keys) { wait(keys, kDefaultTimeout); }

void PrivateFileStore::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  const Deadline deadline(timeout);
  Backoff backoff;
  for (const std::string& key : keys) {
    while (!has(key)) {
      if (deadline.passed()) {
        throw DeadlineExceeded(detail::concat("gloo store ", dir_, ": the key '", key,
                                              "' was not set within ", format_duration(timeout)));
      }
      backoff.sleep(deadline);
    }
  }
}

}  // namespace gloo_detail
}  // namespace rv
