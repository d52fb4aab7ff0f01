// Helpers for the end-to-end tests: run the real `reduce-verify` binary and the real
// `xxh128sum`, and build small golden files from the committed suite.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace rv::test {

// The binary under test: this build's, or RV_TOOL_UNDER_TEST (to show that a test fails
// with an older binary, built from the commit before a fix).
inline std::string tool_path() {
  const char* other = std::getenv("RV_TOOL_UNDER_TEST");
  return other && *other ? other : RV_TOOL_PATH;
}

inline ProcessResult run_tool(const std::vector<std::string>& args,
                              const ProcessOptions& options = {}) {
  std::vector<std::string> argv = {tool_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, options);
}

inline std::string committed_suite() { return RV_SOURCE_DIR "/golden/fixed-order.xxh128"; }

// What `xxh128sum FILE` prints as the digest (its first token). Fails the test when the
// program is missing (Debian package `xxhash`) or fails.
std::string xxh128sum(const std::string& path);

// The committed suite's lines, without comments, for cases of at most max_elements (W × N).
std::vector<std::string> suite_lines(std::uint64_t max_elements);

// Joins lines with '\n', each line terminated.
std::string join_lines(const std::vector<std::string>& lines);

// "exit 2, stderr: …" for assertion messages.
std::string summary(const ProcessResult& result);

}  // namespace rv::test
