#include "tests/cli/cli_support.h"

#include "core/case_id.h"
#include "verify/golden/golden_file.h"

namespace rv::test {

std::string xxh128sum(const std::string& path) {
  const std::string program = find_program("xxh128sum");
  if (program.empty()) {
    ADD_FAILURE() << "xxh128sum not found in PATH (Debian package xxhash; ci/install-deps.sh)";
    return "";
  }
  const ProcessResult result = run_process({program, path});
  EXPECT_EQ(result.exit_code, 0) << "xxh128sum " << path << ": " << summary(result);
  return result.out.substr(0, result.out.find(' '));
}

std::vector<std::string> suite_lines(std::uint64_t max_elements) {
  const GoldenFile file = read_golden_file(committed_suite());
  std::vector<std::string> lines;
  for (const GoldenEntry& entry : file.entries) {
    if (entry.id.count * entry.id.world <= max_elements) {
      lines.push_back(format_golden_line(entry.digest, entry.id));
    }
  }
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

std::string summary(const ProcessResult& result) {
  return result.describe() + ", stdout: " + result.out.substr(0, 2000) +
         " stderr: " + result.err.substr(0, 2000);
}

}  // namespace rv::test
