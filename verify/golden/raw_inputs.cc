#include "verify/golden/raw_inputs.h"

#include "core/case_id.h"
#include "core/error.h"
#include "verify/common/file_io.h"

namespace rv {

std::uint64_t check_raw_inputs(const std::vector<std::string>& files) {
  if (files.empty()) throw InputError("--inputs: no input files given (one per rank)");
  if (files.size() > kMaxWorld) {
    throw InputError("--inputs: " + std::to_string(files.size()) + " files is more ranks than " +
                     std::to_string(kMaxWorld));
  }
  std::vector<std::uint64_t> sizes;
  for (const std::string& path : files) {
    const std::uint64_t size = regular_file_size(path);
    if (size % sizeof(float) != 0) {
      throw InputError(path + ": size " + std::to_string(size) +
                       " bytes is not a multiple of 4 (raw little-endian binary32 expected)");
    }
    if (!sizes.empty() && size != sizes[0]) {
      throw InputError(path + ": " + std::to_string(size / 4) + " values, but " + files[0] +
                       " (rank 0) has " + std::to_string(sizes[0] / 4) +
                       ": every rank's arena must have the same length");
    }
    sizes.push_back(size);
  }
  const std::uint64_t count = sizes[0] / sizeof(float);
  if (count * files.size() > kMaxTotalElements) {
    throw InputError("--inputs: " + std::to_string(files.size()) + " × " + std::to_string(count) +
                     " values is more than the maximum " + std::to_string(kMaxTotalElements));
  }
  return count;
}

std::vector<std::vector<float>> read_raw_inputs(const std::vector<std::string>& files) {
  const std::uint64_t count = check_raw_inputs(files);
  std::vector<std::vector<float>> arenas;
  arenas.reserve(files.size());
  for (const std::string& path : files) arenas.push_back(read_f32_file(path, count));
  return arenas;
}

std::string inputs_label(const std::vector<std::string>& files, Op op, std::size_t count,
                         Contract contract) {
  std::string label = "contract=" + std::string(to_string(contract)) +
                      ",op=" + std::string(to_string(op)) + ",w=" + std::to_string(files.size()) +
                      ",n=" + std::to_string(count) + ",inputs=";
  for (std::size_t r = 0; r < files.size(); ++r) label += (r ? ";" : "") + files[r];
  return label;
}

std::string inputs_line(const Digest& digest, const std::vector<std::string>& files, Op op,
                        std::size_t count, Contract contract) {
  const std::string label = inputs_label(files, op, count, contract);
  std::string escaped;
  bool escapes = false;
  for (const char c : label) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '\n') {
      escaped += "\\n";
    } else if (c == '\r') {
      escaped += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      const char* hex = "0123456789abcdef";
      escaped += std::string("\\x") + hex[byte >> 4] + hex[byte & 15];
    } else {
      escaped += c;
      continue;
    }
    escapes = true;
  }
  return (escapes ? "\\" : "") + digest.hex() + "  " + escaped;
}

CaseId inputs_case(const std::vector<std::string>& files, Op op, std::size_t count,
                   Contract contract) {
  CaseId id;
  id.contract = contract;
  id.op = op;
  id.world = static_cast<std::uint32_t>(files.size());
  id.count = count;
  return id;
}

}  // namespace rv
