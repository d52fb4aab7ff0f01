#include "verify/common/raw_inputs.h"

#include "core/case_id.h"
#include "core/dtype_arrays.h"
#include "core/error.h"
#include "verify/common/file_io.h"

namespace rv {

namespace {

std::string format_name(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return "bfloat16";
    case DType::kF16:
      return "binary16";
    case DType::kF32:
      break;
  }
  return "binary32";
}

}  // namespace

std::uint64_t check_raw_inputs(const std::vector<std::string>& files, DType dtype) {
  const std::uint64_t width = dtype_bytes(dtype);
  if (files.empty()) throw InputError("--inputs: no input files given (one per rank)");
  if (files.size() > kMaxWorld) {
    throw InputError("--inputs: " + std::to_string(files.size()) + " files is more ranks than " +
                     std::to_string(kMaxWorld));
  }
  std::vector<std::uint64_t> sizes;
  for (const std::string& path : files) {
    const std::uint64_t size = regular_file_size(path);
    if (size % width != 0) {
      throw InputError(path + ": size " + std::to_string(size) + " bytes is not a multiple of " +
                       std::to_string(width) + " (raw little-endian " + format_name(dtype) +
                       " expected: --dtype " + std::string(to_string(dtype)) + ")");
    }
    if (!sizes.empty() && size != sizes[0]) {
      throw InputError(path + ": " + std::to_string(size / width) + " values, but " + files[0] +
                       " (rank 0) has " + std::to_string(sizes[0] / width) +
                       ": every rank's arena must have the same length");
    }
    sizes.push_back(size);
  }
  const std::uint64_t count = sizes[0] / width;
  if (count * files.size() > kMaxTotalElements) {
    throw InputError("--inputs: " + std::to_string(files.size()) + " × " + std::to_string(count) +
                     " values is more than the maximum " + std::to_string(kMaxTotalElements));
  }
  return count;
}

std::vector<std::vector<float>> read_raw_inputs(const std::vector<std::string>& files,
                                                DType dtype) {
  const std::uint64_t count = check_raw_inputs(files, dtype);
  std::vector<std::vector<float>> arenas;
  arenas.reserve(files.size());
  for (const std::string& path : files) {
    if (dtype == DType::kF32) {
      arenas.push_back(read_f32_file(path, count));
      continue;
    }
    // The size was checked above; a file that changed since is refused by the byte limit.
    const std::string bytes = read_file_bytes(path, count * dtype_bytes(dtype));
    if (bytes.size() != count * dtype_bytes(dtype)) {
      throw InputError(path + ": changed size while being read");
    }
    std::vector<float> values(count);
    widen_into(bytes.data(), count, dtype, values.data());
    arenas.push_back(std::move(values));
  }
  return arenas;
}

std::string inputs_label(const std::vector<std::string>& files, Op op, std::size_t count,
                         Contract contract, DType dtype) {
  const std::string dtype_field =
      dtype == DType::kF32 ? "" : ",dtype=" + std::string(to_string(dtype));
  std::string label = "contract=" + std::string(to_string(contract)) +
                      ",op=" + std::string(to_string(op)) + dtype_field + ",w=" + std::to_string(files.size()) +
                      ",n=" + std::to_string(count) + ",inputs=";
  for (std::size_t r = 0; r < files.size(); ++r) label += (r ? ";" : "") + files[r];
  return label;
}

std::string inputs_line(const Digest& digest, const std::vector<std::string>& files, Op op,
                        std::size_t count, Contract contract, DType dtype) {
  const std::string label = inputs_label(files, op, count, contract, dtype);
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
                   Contract contract, DType dtype) {
  CaseId id;
  id.dtype = dtype;
  id.contract = contract;
  id.op = op;
  id.world = static_cast<std::uint32_t>(files.size());
  id.count = count;
  return id;
}

}  // namespace rv
