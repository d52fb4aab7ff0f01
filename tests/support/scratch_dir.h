// A fresh temporary directory for one test, removed with everything in it when the test
// ends, so tests never share or leave files.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rv::test {

class ScratchDir {
 public:
  ScratchDir();  // under $TMPDIR (or /tmp)
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

  // Writes bytes to file(name) and returns that path.
  std::string write(std::string_view name, std::string_view bytes) const;
  std::string write(std::string_view name, const void* bytes, std::size_t size) const;
  // The whole content of a file (any path); throws std::runtime_error when unreadable.
  static std::string read(const std::string& path);

 private:
  std::string path_;
};

}  // namespace rv::test
