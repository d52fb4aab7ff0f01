#include "verify/golden/golden_file.h"

#include <map>

#include "core/error.h"
#include "verify/common/file_io.h"

namespace rv {
namespace {

// Longer than any canonical line by far; a longer one is garbage, not a case.
constexpr std::size_t kMaxLineLength = 1024;
constexpr std::size_t kMaxFileBytes = std::size_t{256} << 20;

}  // namespace

ParsedGoldenLine parse_golden_line(std::string_view line) {
  ParsedGoldenLine parsed;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  auto malformed = [&parsed](std::string reason) {
    parsed.kind = GoldenLineKind::kMalformed;
    parsed.detail = std::move(reason);
    return parsed;
  };
  if (line.find_first_not_of(" \t") == std::string_view::npos) return parsed;  // blank
  if (line.front() == '#') {
    parsed.kind = GoldenLineKind::kComment;
    parsed.detail = std::string(line.substr(1));
    return parsed;
  }
  if (line.size() > kMaxLineLength) {
    return malformed("line is " + std::to_string(line.size()) + " characters long (at most " +
                     std::to_string(kMaxLineLength) + ")");
  }
  if (line.find('\0') != std::string_view::npos) return malformed("line contains a NUL byte");
  const std::size_t separator = line.find("  ");
  if (separator == std::string_view::npos) {
    return malformed("expected '<32 hex digits>  <case-id>' (two spaces between)");
  }
  const auto digest = parse_digest_hex(line.substr(0, separator));
  if (!digest) return malformed("the digest is not 32 lowercase hex digits");
  try {
    parsed.entry.id = parse_case_id(line.substr(separator + 2));
  } catch (const InputError& error) {
    return malformed(error.what());
  }
  parsed.kind = GoldenLineKind::kEntry;
  parsed.entry.digest = *digest;
  return parsed;
}

GoldenFile parse_golden_text(std::string_view text, std::string path) {
  GoldenFile file;
  file.path = std::move(path);
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    ++line_number;
    ParsedGoldenLine parsed = parse_golden_line(line);
    switch (parsed.kind) {
      case GoldenLineKind::kBlank:
        break;
      case GoldenLineKind::kComment:
        file.comments.push_back(std::move(parsed.detail));
        break;
      case GoldenLineKind::kEntry:
        parsed.entry.line = line_number;
        file.entries.push_back(parsed.entry);
        break;
      case GoldenLineKind::kMalformed:
        file.malformed.push_back({line_number, std::move(parsed.detail)});
        break;
    }
  }
  return file;
}

GoldenFile read_golden_file(const std::string& path) {
  return parse_golden_text(read_file_bytes(path, kMaxFileBytes), path);
}

std::vector<DigestConflict> digest_conflicts(const std::vector<const GoldenFile*>& files) {
  struct First {
    Digest digest;
    std::string where;
  };
  std::map<std::string, First> seen;
  std::vector<DigestConflict> conflicts;
  for (const GoldenFile* file : files) {
    for (const GoldenEntry& entry : file->entries) {
      const std::string where = file->path + ":" + std::to_string(entry.line);
      const std::string id = format_case_id(entry.id);
      const auto [it, added] = seen.emplace(id, First{entry.digest, where});
      if (!added && !(it->second.digest == entry.digest)) {
        conflicts.push_back({id, it->second.where, where, it->second.digest, entry.digest});
      }
    }
  }
  return conflicts;
}

std::string format_golden_line(const Digest& digest, const CaseId& id) {
  return digest.hex() + "  " + format_case_id(id);
}

}  // namespace rv
