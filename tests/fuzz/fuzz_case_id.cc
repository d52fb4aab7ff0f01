// libFuzzer target: the case-id parser. On any input it either throws InputError with a
// one-line message, or accepts exactly the canonical text (format(parse(s)) == s) of a
// case that validates. Anything else — another exception, a crash, a sanitizer report —
// is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/case_id.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  rv::CaseId id;
  try {
    id = rv::parse_case_id(text);
  } catch (const rv::InputError& error) {
    const std::string_view message = error.what();
    if (message.empty() || message.find('\n') != std::string_view::npos) std::abort();
    return 0;
  }
  if (rv::format_case_id(id) != text) std::abort();  // only the canonical form is accepted
  rv::validate_case_id(id);                          // and it is in range
  return 0;
}
