// Reading and writing the files a user hands us, with errors that name the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rv {

// The size of a regular file; throws InputError naming the file when it is missing, not a
// regular file, or unreadable.
std::uint64_t regular_file_size(const std::string& path);

// The whole file; throws InputError when it is larger than max_bytes.
std::string read_file_bytes(const std::string& path, std::uint64_t max_bytes);

// A raw little-endian binary32 arena; its size must be a multiple of 4.
std::vector<float> read_f32_file(const std::string& path, std::uint64_t max_elements);

// Writes an output file as verify/common/output_file.h says: a regular file is replaced
// whole (a temporary beside it, then rename), a FIFO or a character device is written in place.
void write_file_atomically(const std::string& path, const void* bytes, std::size_t size);

}  // namespace rv
