// Golden files (docs/DESIGN.md §3): GNU checksum style lines `<digest>  <case-id>`, `#` comment
// lines for metadata. Parsing is separate from verification and from reporting (as xxhsum
// keeps ParseFileReport apart from LineStatus).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/case_id.h"
#include "core/digest/digest.h"

namespace rv {

struct GoldenEntry {
  std::size_t line = 0;  // 1-based
  Digest digest;
  CaseId id;
};

struct MalformedLine {
  std::size_t line = 0;
  std::string reason;
};

struct GoldenFile {
  std::string path;
  std::vector<std::string> comments;  // without the leading '#'
  std::vector<GoldenEntry> entries;
  std::vector<MalformedLine> malformed;
};

enum class GoldenLineKind { kBlank, kComment, kEntry, kMalformed };

struct ParsedGoldenLine {
  GoldenLineKind kind = GoldenLineKind::kBlank;
  GoldenEntry entry;   // when kEntry (line left 0)
  std::string detail;  // the comment text, or why the line is malformed
};

// One line without its newline. Never throws on any input.
ParsedGoldenLine parse_golden_line(std::string_view line);

// A whole file's text; lines are numbered from 1. Never throws on any input.
GoldenFile parse_golden_text(std::string_view text, std::string path);

// Reads and parses a file; throws InputError naming the file when it cannot be read or is
// larger than any golden file could be.
GoldenFile read_golden_file(const std::string& path);

// `<digest>  <case-id>`
std::string format_golden_line(const Digest& digest, const CaseId& id);

}  // namespace rv
