// reduce-verify replay RECORDING_DIR: a recording verifies itself, as `xxh128sum -c` does a
// checksum file. The manifest is read and chain-checked, every rank file checked against its
// recorded input digest, every bucket reduced again and its digest checked against the recorded
// result (verify/recording/replay.h); `step S bucket B: OK` or `FAILED (…)` per record, closing
// counts. Exit 0 when at least one bucket was checked and all agree, 1 when a file or a result
// differs, 2 on a missing, malformed or broken-chain manifest or a missing or wrong-size file.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/fp_environment.h"
#include "verify/cli/commands.h"
#include "verify/common/exit_codes.h"
#include "verify/common/file_io.h"
#include "verify/common/output_file.h"
#include "verify/recording/manifest.h"
#include "verify/recording/replay.h"

namespace rv {
namespace {

struct ReplayOptions {
  std::string directory;
  bool quiet = false;  // no OK lines
  std::string json;
};

std::string bucket_name(const RecordedBucket& bucket) {
  return "step " + std::to_string(bucket.step) + " bucket " + std::to_string(bucket.digests.index);
}

// The line for one bucket, and its diagnostic on stderr.
void report(const RecordedBucket& bucket, const ReplayOutcome& outcome, bool quiet) {
  const std::string name = bucket_name(bucket);
  switch (outcome.verdict) {
    case ReplayVerdict::kVerified:
      if (!quiet) std::cout << name << ": OK\n";
      return;
    case ReplayVerdict::kInputsOnly:
      std::cout << name << ": inputs OK, result not replayable (" << outcome.reason << ")\n";
      return;
    case ReplayVerdict::kFailed:
      break;
  }
  if (!outcome.file.empty()) {
    std::cout << name << ": FAILED (" << outcome.file << ": rank " << outcome.rank
              << "'s input differs from its recorded digest)\n";
    std::cerr << "reduce-verify replay: " << bucket.where << ": " << outcome.file << " digests to "
              << outcome.got << ", the manifest records " << outcome.recorded << "; "
              << outcome.reason << "\n";
  } else {
    std::cout << name << ": FAILED (the replayed result differs; every rank file agrees)\n";
    std::cerr << "reduce-verify replay: " << bucket.where << ": " << outcome.reason << ": "
              << outcome.got << " replayed under " << to_string(bucket.contract) << " "
              << to_string(bucket.op) << " " << to_string(bucket.dtype) << ", the manifest records "
              << outcome.recorded << "\n";
  }
}

nlohmann::json outcome_json(const RecordedBucket& bucket, const ReplayOutcome& outcome) {
  static const char* const kVerdicts[] = {"ok", "inputs-only", "failed"};
  nlohmann::json row = {{"step", bucket.step},
                        {"bucket", bucket.digests.index},
                        {"record", bucket.record},
                        {"verdict", kVerdicts[static_cast<int>(outcome.verdict)]}};
  if (outcome.verdict != ReplayVerdict::kVerified) row["reason"] = outcome.reason;
  if (outcome.verdict == ReplayVerdict::kFailed) {
    if (!outcome.file.empty()) row["file"] = outcome.file;
    row["rank"] = outcome.rank;
    row["digest"] = outcome.got;
    row["recorded"] = outcome.recorded;
  }
  return row;
}

int run_replay(const ReplayOptions& options) {
  enforce_ieee_fp_environment();
  if (!options.json.empty()) check_output_path(options.json, "--json");
  // 1. Parse and check everything that is bad input before anything is verified.
  const RecordingManifest manifest = read_manifest(options.directory);
  if (manifest.torn_record != 0) {
    std::cerr << "reduce-verify replay: " << manifest.path << ":" << manifest.torn_record
              << ": a torn last record (still being written?), left out\n";
  }
  if (!manifest.ended) {
    std::cerr << "reduce-verify replay: " << manifest.path << ": no end record after record "
              << manifest.records << " (the run is still recording, or the manifest was cut off)\n";
  }
  if (manifest.buckets.empty()) {
    std::cerr << "reduce-verify replay: " << manifest.path << ": no recorded buckets\n";
    return kExitBadInput;
  }
  check_rank_files(manifest);
  // 2. Verify, 3. report.
  std::size_t verified = 0, inputs_only = 0, failed = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (const RecordedBucket& bucket : manifest.buckets) {
    const ReplayOutcome outcome = replay_bucket(manifest, bucket);
    report(bucket, outcome, options.quiet);
    rows.push_back(outcome_json(bucket, outcome));
    switch (outcome.verdict) {
      case ReplayVerdict::kVerified:
        ++verified;
        break;
      case ReplayVerdict::kInputsOnly:
        ++inputs_only;
        break;
      case ReplayVerdict::kFailed:
        ++failed;
        break;
    }
  }
  std::cout << verified << " verified, " << failed << " failed";
  if (inputs_only) std::cout << ", " << inputs_only << " inputs only";
  std::cout << "\n";
  if (failed) {
    std::cerr << "reduce-verify replay: WARNING: " << failed << " of " << manifest.buckets.size()
              << " recorded buckets did NOT replay as recorded\n";
  }
  if (!options.json.empty()) {
    const nlohmann::json document = {{"recording", options.directory},
                                     {"manifest", manifest.path},
                                     {"world", manifest.world},
                                     {"verified", verified},
                                     {"failed", failed},
                                     {"inputs_only", inputs_only},
                                     {"buckets", rows}};
    const std::string text = document.dump(2) + "\n";
    write_file_atomically(options.json, text.data(), text.size());
  }
  return failed ? kExitVerificationFailed : kExitVerified;
}

}  // namespace

void setup_replay(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ReplayOptions>();
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Verify a recording (reduce_verify.Recorder) against its manifest: the manifest's chain, "
      "every rank file against its recorded input digest, and every bucket reduced again under "
      "its recorded contract, op and dtype against its recorded result digest. Prints `step S "
      "bucket B: OK` or `FAILED (…)` naming the rank file that differs, then counts. A "
      "library-sum bucket's files are checked; its result has no replay. Exit 0 when every "
      "bucket agrees, 1 when a file or a result differs, 2 on a missing, malformed or "
      "broken-chain manifest (named file:record) or a missing or wrong-size rank file.");
  cmd->add_option("recording_dir", options->directory,
                  "the Recorder's directory (holding manifest.jsonl)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("-q,--quiet", options->quiet, "do not print OK lines");
  cmd->add_option("--json", options->json,
                  "also write every bucket's verdict (step, bucket, record, file, digests) as "
                  "JSON to this file");
  cmd->callback([options, &exit_code] { exit_code = run_replay(*options); });
}

}  // namespace rv
