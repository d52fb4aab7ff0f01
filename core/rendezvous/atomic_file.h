// The filesystem primitives the rendezvous relies on, and nothing else: a file appears
// whole or not at all (write a private temporary, then rename or link it into place), and
// link(2) refuses to replace an existing name, which makes "create with these contents
// unless it exists" one atomic step. Both hold on local filesystems and on NFS. Every file
// is created 0600 and every directory 0700, whatever the umask (docs/DESIGN.md §10): only
// the job's user may read the rendezvous, since whoever can read it is a member.
#pragma once

#include <optional>
#include <string>

namespace rv {

// Writes `contents` to a temporary beside `path`, then renames it over `path`: readers see
// the old file, or no file, or the whole new one. Throws RuntimeFailure naming the file.
void write_file_atomically(const std::string& path, const std::string& contents);

// Creates `path` with `contents` in one step, unless a file of that name exists already:
// returns false then (and leaves the existing file alone). Throws RuntimeFailure on any
// other error.
bool publish_file_exclusively(const std::string& path, const std::string& contents);

// The whole file, or nullopt when it does not exist. Throws RuntimeFailure on other errors.
std::optional<std::string> read_small_file(const std::string& path);

// Everything left to read from fd, an open file whose name is `path` (for the message); closes
// fd whatever happens. Throws RuntimeFailure naming the path when a read fails.
std::string read_to_end(int fd, const std::string& path);

// Creates one directory; false when the name exists already. Throws RuntimeFailure on any
// other error (a missing parent, no permission).
bool make_directory_exclusively(const std::string& path);

// mkdir -p, each directory it creates 0700. Throws RuntimeFailure naming the directory.
void make_directories(const std::string& path);

}  // namespace rv
