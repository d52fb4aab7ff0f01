// A digest trail as python/reduce_verify/trail.py writes it (docs/DESIGN.md §12): hash-chained
// JSON lines (chained_lines.h, the reader it shares with the Recorder's manifest), a header,
// one record per step, an end record. Reading checks every link, so an edited, reordered or
// dropped record is named by its record number.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "verify/audit/chained_lines.h"
#include "verify/audit/record_fields.h"

namespace rv {

using TrailBucket = BucketDigests;

struct TrailStep {
  std::uint64_t step = 0;
  std::size_t record = 0;  // 1-based record (= line) number in its file
  std::vector<TrailBucket> buckets;
  std::vector<std::string> params, optimizer;  // per rank; optimizer may be empty
};

struct TrailFile {
  std::string path;
  std::uint32_t world = 0;
  std::vector<std::string> hooks;
  std::string digest_kind;
  std::uint64_t start_step = 0;
  std::uint64_t parameters = 0;  // the model's parameter count (0: not recorded)
  std::vector<TrailStep> steps;
  bool ended = false;           // the end record was read: the trail is complete
  std::size_t torn_record = 0;  // a torn last record (still being written), left out
  std::size_t records = 0;      // complete records read, the header included
  std::string head;             // the last complete record's chain
};

// Parses and chain-checks a trail's text; `path` only names it in messages. Throws
// InputError naming "path:record" on a malformed record or a broken link; a last record
// without its newline that does not parse is torn (left out, torn_record set).
TrailFile parse_trail(const std::string& path, std::string_view text);

// Reads and parses a trail file.
TrailFile read_trail(const std::string& path);

}  // namespace rv
