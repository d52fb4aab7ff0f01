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

// Two lines that give one case (its contract included) two different digests: one of them is
// wrong, and which one a run is held to must not depend on the order of lines or files. A
// case given the same digest twice is no conflict.
struct DigestConflict {
  std::string id;             // the canonical case id
  std::string first, second;  // "file:line" of the two lines, in reading order
  Digest first_digest, second_digest;
};

// Every conflict among the entries of `files`, read in order. Never throws.
std::vector<DigestConflict> digest_conflicts(const std::vector<const GoldenFile*>& files);

// `<digest>  <case-id>`
std::string format_golden_line(const Digest& digest, const CaseId& id);

}  // namespace rv
