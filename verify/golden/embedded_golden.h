// The committed golden suite, embedded in the binary at build time (docs/DESIGN.md §6: `run`
// with no options verifies it).
#pragma once

#include <string_view>
#include <vector>

namespace rv {

struct EmbeddedGolden {
  const char* path;       // e.g. "golden/fixed-order.xxh128"
  std::string_view text;  // the file's bytes
};

std::vector<EmbeddedGolden> embedded_golden_files();

}  // namespace rv
