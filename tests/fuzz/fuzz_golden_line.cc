// libFuzzer target: the golden-file parsers. parse_golden_text and parse_golden_line never
// throw; every entry they accept formats back to the line it came from (less a trailing
// CR) and parses again to the same entry; line numbers stay within the text.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
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
  return 0;
}
