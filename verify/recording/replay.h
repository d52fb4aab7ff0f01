// Replaying a recording (`reduce-verify replay`, docs/audit.md "Replaying a recording"): every
// recorded bucket's rank files against their recorded input digests, then the files reduced
// again under the recorded contract, op and dtype by the oracle's straight reference (the
// expectation `digest --inputs` prints), its digest against the recorded result digests.
#pragma once

#include <cstdint>
#include <string>

#include "verify/recording/manifest.h"

namespace rv {

enum class ReplayVerdict {
  kVerified,    // every rank file and the replayed result equal what was recorded
  kInputsOnly,  // every rank file agrees; a library-sum result has no replay (DESIGN.md §2.3)
  kFailed,      // a rank file or the replayed result differs
};

struct ReplayOutcome {
  ReplayVerdict verdict = ReplayVerdict::kVerified;
  std::string file;        // the first rank file that differs (its path), "" otherwise
  std::uint32_t rank = 0;  // its rank, or the first rank whose recorded result differs
  std::uint32_t files_differing = 0;
  std::string got, recorded;  // the digests behind a failure
  std::string reason;         // one phrase: what differs, or why there is no result to replay
};

// The path of rank r's file of `bucket`.
std::string rank_file_path(const RecordingManifest& manifest, const RecordedBucket& bucket,
                           std::uint32_t rank);

// Checks, before anything is read, that every rank file of every record is a regular file of
// numel × the dtype's bytes; throws InputError naming the file and its record otherwise.
void check_rank_files(const RecordingManifest& manifest);

// Replays one recorded bucket (its files checked by check_rank_files).
ReplayOutcome replay_bucket(const RecordingManifest& manifest, const RecordedBucket& bucket);

}  // namespace rv
