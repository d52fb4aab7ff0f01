#include "core/rendezvous/private_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace rv {

std::string mode_text(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", mode & 07777u);
  return text;
}

void require_private_directory(const std::string& dir, const std::string& what) {
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0) {
    throw RuntimeFailure(detail::concat(what, " ", dir, " cannot be used: ", std::strerror(errno)));
  }
  if (!S_ISDIR(info.st_mode)) {
    throw RuntimeFailure(detail::concat(what, " ", dir, " is not a directory (a symbolic link?)"));
  }
  if (info.st_uid != ::geteuid() || (info.st_mode & 077) != 0) {
    throw RuntimeFailure(
        detail::concat(what, " ", dir, " belongs to uid ", info.st_uid, " with mode ",
                       mode_text(static_cast<unsigned>(info.st_mode)),
                       ": it must be this user's (uid ", ::geteuid(),
                       ") with no access for others, since whoever can read it can join the world "
                       "and whoever can write it can forge its records"));
  }
}

}  // namespace rv
