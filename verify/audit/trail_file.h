// A digest trail as python/reduce_verify/trail.py writes it (docs/DESIGN.md §12): one JSON
// object per line, each ending in "chain", the XXH3-128 of the previous record's chain (32
// zeros before the first) followed by the record's bytes without its "chain". Reading checks
// every link, so an edited, reordered or dropped record is named by its record number.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rv {

struct TrailBucket {
  std::uint64_t index = 0, numel = 0;
  std::vector<std::string> inputs, results;  // one hex digest per rank
};

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

// The chain after `previous` for a record whose text without "chain" is `body`: XXH3-128 of
// previous's 32 hex digits then body, zero-padded to a multiple of 4 bytes.
std::string chain_next(std::string_view previous, std::string_view body);

// Parses and chain-checks a trail's text; `path` only names it in messages. Throws
// InputError naming "path:record" on a malformed record or a broken link; a last record
// without its newline that does not parse is torn (left out, torn_record set).
TrailFile parse_trail(const std::string& path, std::string_view text);

// Reads and parses a trail file.
TrailFile read_trail(const std::string& path);

}  // namespace rv
