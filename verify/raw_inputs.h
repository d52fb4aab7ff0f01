// User-supplied arenas (DESIGN.md §4): raw little-endian binary32 files, one per rank, all
// the same length (e.g. gradient buckets dumped from a real run).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rv {

// Reads files[r] as rank r's arena. Throws InputError naming the file: missing or unreadable,
// a size not a multiple of 4, lengths that differ from file 0's, too many ranks or values.
// Sizes are checked before anything is read, so bad input never allocates.
std::vector<std::vector<float>> read_raw_inputs(const std::vector<std::string>& files);

// The same checks without reading: returns the common number of values per file.
std::uint64_t check_raw_inputs(const std::vector<std::string>& files);

}  // namespace rv
