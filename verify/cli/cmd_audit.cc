// reduce-verify audit TRAIL_A TRAIL_B: lines two runs' digest trails up step by step and
// names the first step, bucket and rank where they part, and why: compute upstream, the
// reduction, the bucket layout or the optimizer step (docs/DESIGN.md §12, docs/audit.md).
// Exit 0 when they agree, 1 when they part, 2 when a trail is malformed, broken or the two
// do not line up.
#include <iostream>
#include <memory>

#include "verify/audit/trail_audit.h"
#include "verify/audit/trail_file.h"
#include "verify/cli/commands.h"
#include "verify/common/exit_codes.h"
#include "verify/common/file_io.h"

namespace rv {
namespace {

struct AuditOptions {
  std::string a, b;
  std::string json;
};

void warn_incomplete(const TrailFile& trail) {
  if (trail.torn_record != 0) {
    std::cerr << "reduce-verify audit: " << trail.path << ":" << trail.torn_record
              << ": a torn last record (still being written?), left out; auditing the "
              << trail.records << " complete records\n";
  }
  if (!trail.ended) {
    std::cerr << "reduce-verify audit: " << trail.path << ": no end record after record "
              << trail.records << " (the run is still going, or the trail was cut off)\n";
  }
}

int run_audit(const AuditOptions& options) {
  const TrailFile a = read_trail(options.a);
  const TrailFile b = read_trail(options.b);
  warn_incomplete(a);
  warn_incomplete(b);
  const AuditResult result = audit_trails(a, b);
  std::cout << result.summary << "\n";
  if (!result.detail.empty()) std::cout << result.detail << "\n";
  if (!result.note.empty()) std::cout << "note: " << result.note << "\n";
  if (!options.json.empty()) {
    const std::string text = result.report.dump(2) + "\n";
    write_file_atomically(options.json, text.data(), text.size());
  }
  return result.parting == Parting::kNone ? kExitVerified : kExitVerificationFailed;
}

}  // namespace

void setup_audit(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<AuditOptions>();
  CLI::App* cmd = app.add_subcommand(
      "audit",
      "Line up two training runs' digest trails (reduce_verify.Trail) step by step and name "
      "the first step, bucket and rank where they part, classified: compute upstream, the "
      "reduction, the bucket layout or the optimizer step. Exit 0 when they agree, 1 when they "
      "part, 2 on a malformed or broken-chain trail (named file:record) or trails that do not "
      "line up.");
  cmd->add_option("trail_a", options->a, "a trail file")->required()->check(CLI::ExistingFile);
  cmd->add_option("trail_b", options->b, "another run's trail file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--json", options->json, "also write the verdict as JSON to this file");
  cmd->callback([options, &exit_code] { exit_code = run_audit(*options); });
}

}  // namespace rv
