#include "core/transport/gloo/private_file_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "core/deadline.h"
#include "core/error.h"
#include "core/rendezvous/atomic_file.h"
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
  const std::string contents = read_to_end(fd, path);
  return std::vector<char>(contents.begin(), contents.end());
}

}  // namespace

PrivateFileStore::PrivateFileStore(std::string dir) : dir_(std::move(dir)) {
  require_private_directory(dir_, "the gloo store");
}

std::string PrivateFileStore::path_of(const std::string& key) const {
  return dir_ + "/" + file_name_of(key);
}

void PrivateFileStore::set(const std::string& key, const std::vector<char>& data) {
  // A file of the job directory's own kind: 0600 whatever the umask, linked into place so a
  // reader never sees it half written, and never replacing a key already set.
  const std::string path = path_of(key);
  if (!publish_file_exclusively(path, std::string(data.begin(), data.end()))) {
    throw RuntimeFailure(detail::concat("gloo store: the key '", key, "' is set already (", path,
                                        "): a stale or reused job directory, or two "
                                        "processes started as one rank?"));
  }
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
