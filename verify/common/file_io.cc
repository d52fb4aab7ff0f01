#include "verify/common/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "verify/common/output_file.h"

namespace rv {

std::uint64_t regular_file_size(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw InputError(path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) throw InputError(path + ": not a regular file");
  if (::access(path.c_str(), R_OK) != 0) {
    throw InputError(path + ": cannot read: " + std::strerror(errno));
  }
  return static_cast<std::uint64_t>(info.st_size);
}

std::string read_file_bytes(const std::string& path, std::uint64_t max_bytes) {
  const std::uint64_t size = regular_file_size(path);
  if (size > max_bytes) {
    throw InputError(path + ": " + std::to_string(size) + " bytes is more than the " +
                     std::to_string(max_bytes) + " this input may have");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open: " + std::strerror(errno));
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) {
    throw InputError(path + ": read failed after " + std::to_string(in.gcount()) + " bytes");
  }
  return bytes;
}

std::vector<float> read_f32_file(const std::string& path, std::uint64_t max_elements) {
  const std::uint64_t size = regular_file_size(path);
  if (size % sizeof(float) != 0) {
    throw InputError(path + ": size " + std::to_string(size) +
                     " bytes is not a multiple of 4 (raw little-endian binary32 expected)");
  }
  if (size / sizeof(float) > max_elements) {
    throw InputError(path + ": " + std::to_string(size / sizeof(float)) +
                     " values is more than the maximum " + std::to_string(max_elements));
  }
  const std::string bytes = read_file_bytes(path, size);
  std::vector<float> values(bytes.size() / sizeof(float));
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

void write_file_atomically(const std::string& path, const void* bytes, std::size_t size) {
  OutputFile out(path);
  out.write(bytes, size);
  out.commit();
}

}  // namespace rv
