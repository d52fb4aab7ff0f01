// libFuzzer target: the report reader of `compare` (verify/golden/report_reader.h). On any
// bytes it returns or throws InputError naming the file, never another exception (a raw
// nlohmann type_error, std::out_of_range) or a crash; what it returns holds no more digests
// than the text has results, and no accuracy summary without a case.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.h"
#include "verify/golden/report_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const rv::ReportDigests report = rv::parse_report(text, "fuzz.json");
    if (report.digests.size() > size) std::abort();
    for (const auto& [key, summary] : report.accuracy) {
      if (summary.cases == 0 || key.empty()) std::abort();
    }
  } catch (const rv::InputError& error) {
    if (std::string(error.what()).rfind("fuzz.json: ", 0) != 0) std::abort();
  }
  return 0;
}
