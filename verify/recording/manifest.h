// The Recorder's manifest (python/reduce_verify/recorder.py, docs/audit.md "The recording
// manifest"): `manifest.jsonl` in a recording directory, hash-chained JSON lines in the trail's
// format (verify/audit/chained_lines.h, docs/DESIGN.md §12): a header, one record per recorded
// (step, bucket) whose bucket has the trail's fields plus the rank files, and an end record
// when the Recorder closed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/contract.h"
#include "core/dtype.h"
#include "verify/audit/record_fields.h"

namespace rv {

inline constexpr std::string_view kManifestName = "manifest.jsonl";

struct RecordedBucket {
  std::size_t record = 0;  // 1-based record number in the manifest
  std::string where;       // "manifest path:record"
  std::uint64_t step = 0;
  Contract contract = Contract::kFixedOrder;
  Op op = Op::kSum;
  DType dtype = DType::kF32;
  BucketDigests digests;           // index, numel, inputs and results (one per rank)
  std::vector<std::string> files;  // rank r's values, relative to the recording directory
};

struct RecordingManifest {
  std::string path;       // the manifest file
  std::string directory;  // the recording directory its files are relative to
  std::uint32_t world = 0;
  std::vector<RecordedBucket> buckets;  // in the order recorded
  bool ended = false;                   // the end record was read: the Recorder closed
  std::size_t torn_record = 0;          // a torn last record (still being written), left out
  std::size_t records = 0;              // complete records read, the header included
};

// Parses and chain-checks a manifest's text (`path` names it; `directory` is kept for the
// files). Throws InputError naming "path:record": a malformed or broken-chain record, an
// unknown contract, op or dtype, a rank file that is not a relative path inside the
// directory, a format-3 (unchained) manifest.
RecordingManifest parse_manifest(const std::string& path, const std::string& directory,
                                 std::string_view text);

// Reads directory/manifest.jsonl.
RecordingManifest read_manifest(const std::string& directory);

}  // namespace rv
