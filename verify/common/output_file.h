// The files a user names for the tool's output (`run --report`/`--junit`, `digest --dump`,
// `golden -o`/`--accuracy`). A regular file is replaced whole (a temporary beside it, then
// rename), so a reader sees the old report or the new one, never half. What is not a regular
// file is never replaced: a FIFO or a character device (a terminal, /dev/null) is written to
// in place, as a shell redirection would; a directory, a block device or a socket is refused
// by name. A symlink is followed: its final target is replaced and the link stays a link.
// docs/DESIGN.md §6.
#pragma once

#include <cstddef>
#include <string>

namespace rv {

// Checks, before any work, that `path` can be written as above: it is a regular file, a
// FIFO or a character device (or does not exist yet), and its directory exists and takes a
// new file. Throws InputError naming `option` and the path otherwise.
void check_output_path(const std::string& path, const std::string& option);

// One output being written. Errors that a user's path causes (no such directory, no
// permission, a read-only filesystem, a directory) throw InputError; errors of the machine
// while writing (a full disk, an I/O error) throw RuntimeFailure. Both name the path.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();  // without commit(): the temporary is removed, the target left as it was
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* bytes, std::size_t size);
  // Closes and, for a regular file, renames the temporary over the target.
  void commit();

 private:
  std::string path_;       // as the user gave it
  std::string target_;     // the file written: symlinks followed
  std::string temporary_;  // empty when writing in place
  int fd_ = -1;
};

}  // namespace rv
