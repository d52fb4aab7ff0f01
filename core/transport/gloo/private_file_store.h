// The rendezvous store of a live Gloo world: one file per key in a directory only the job's
// user can enter (docs/DESIGN.md §10). It replaces Gloo's FileStore, which creates its files
// with whatever mode the umask leaves, reads any file it finds whoever wrote it, reuses one
// temporary name per key and asserts on an empty read.
//   - The directory must be a real directory (not a symlink) owned by this user with no
//     permission for group or others; otherwise the store refuses to open, naming it.
//   - A key is written to a private temporary (0600, whatever the umask), then linked into
//     place, which fails if the key exists: a file appears whole or not at all, once.
//   - A key's file is read only if it is a regular file of this user that nobody else can
//     write; anything else is a RuntimeFailure naming the file and its owner ("forged by
//     another user?"), never data.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace rv {
namespace gloo_detail {

class PrivateFileStore final : public ::gloo::rendezvous::Store {
 public:
  // Throws RuntimeFailure when `dir` is missing or others could read or write it.
  explicit PrivateFileStore(std::string dir);

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits up to Store::kDefaultTimeout for the key (the rendezvous asks only for keys it
  // has seen with has()).
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // Whether the key is there, at once. Throws RuntimeFailure for a file it must refuse.
  bool has(const std::string& key) const;

  const std::string& dir() const { return dir_; }
  // The file that holds `key`.
  std::string path_of(const std::string& key) const;

 private:
  std::string dir_;
};

}  // namespace gloo_detail
}  // namespace rv
