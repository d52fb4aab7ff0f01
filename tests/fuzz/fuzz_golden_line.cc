// libFuzzer target: the golden-file parsers. parse_golden_text and parse_golden_line never
// throw; every entry they accept formats back to the line it came from (less a trailing
// CR) and parses again to the same entry; line numbers stay within the text. Whole files:
// digest_conflicts never throws and names two lines of one case with different digests;
// the file with each entry appended again under another digest has a conflict for every
// case, and with each entry appended unchanged each copy conflicts as its original did.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "verify/golden/golden_file.h"

namespace {

void check_entry_round_trip(const rv::GoldenEntry& entry, std::string_view original) {
  const std::string line = rv::format_golden_line(entry.digest, entry.id);
  if (!original.empty() && original.back() == '\r') original.remove_suffix(1);
  if (line != original) std::abort();
  const rv::ParsedGoldenLine again = rv::parse_golden_line(line);
  if (again.kind != rv::GoldenLineKind::kEntry) std::abort();
  if (again.entry.digest != entry.digest || again.entry.id != entry.id) std::abort();
}

std::string_view line_at(std::string_view text, std::size_t number) {
  for (std::size_t i = 1; i < number; ++i) text.remove_prefix(text.find('\n') + 1);
  return text.substr(0, text.find('\n'));
}

// "file:N" → N
std::size_t line_of(const std::string& where) {
  return static_cast<std::size_t>(std::strtoull(where.c_str() + where.rfind(':') + 1, nullptr, 10));
}

void check_conflicts(const rv::GoldenFile& file, std::string_view text) {
  const auto conflicts = rv::digest_conflicts({&file});
  for (const rv::DigestConflict& c : conflicts) {
    const std::size_t first = line_of(c.first), second = line_of(c.second);
    if (first >= second || c.first_digest == c.second_digest) std::abort();
    const rv::ParsedGoldenLine a = rv::parse_golden_line(line_at(text, first));
    const rv::ParsedGoldenLine b = rv::parse_golden_line(line_at(text, second));
    if (a.kind != rv::GoldenLineKind::kEntry || b.kind != rv::GoldenLineKind::kEntry) std::abort();
    if (!(a.entry.id == b.entry.id) || rv::format_case_id(a.entry.id) != c.id) std::abort();
  }
  if (file.entries.empty() || text.size() > 4096) return;
  // The same text with every entry again: unchanged, then under a digest of its own.
  std::string same(text), changed(text);
  if (!same.empty() && same.back() != '\n') {
    same += '\n';
    changed += '\n';
  }
  std::set<std::string> ids;
  for (const rv::GoldenEntry& entry : file.entries) {
    ids.insert(rv::format_case_id(entry.id));
    same += rv::format_golden_line(entry.digest, entry.id) + "\n";
    rv::Digest other = entry.digest;
    other.canonical[15] ^= 1;  // differs from the entry's, so from its case's first digest
    changed += rv::format_golden_line(other, entry.id) + "\n";
  }
  const rv::GoldenFile same_file = rv::parse_golden_text(same, "same");
  // Each copy conflicts exactly where its original did (with its case's first digest).
  if (rv::digest_conflicts({&same_file}).size() != 2 * conflicts.size()) std::abort();
  const rv::GoldenFile changed_file = rv::parse_golden_text(changed, "changed");
  std::set<std::string> conflicting;
  for (const rv::DigestConflict& c : rv::digest_conflicts({&changed_file}))
    conflicting.insert(c.id);
  if (conflicting != ids) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::size_t lines =
      static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;

  const rv::ParsedGoldenLine single = rv::parse_golden_line(text);
  if (single.kind == rv::GoldenLineKind::kEntry) check_entry_round_trip(single.entry, text);

  const rv::GoldenFile file = rv::parse_golden_text(text, "fuzz");
  std::size_t previous = 0;
  for (const rv::GoldenEntry& entry : file.entries) {
    if (entry.line <= previous || entry.line > lines) std::abort();
    previous = entry.line;
    check_entry_round_trip(entry, line_at(text, entry.line));
  }
  for (const rv::MalformedLine& bad : file.malformed) {
    if (bad.line == 0 || bad.line > lines || bad.reason.empty()) std::abort();
  }
  check_conflicts(file, text);
  return 0;
}
