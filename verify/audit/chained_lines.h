// Hash-chained JSON lines (docs/DESIGN.md §12), the one reader of the two files written that
// way: the digest trail (trail_file.h) and the Recorder's manifest
// (verify/recording/manifest.h). One compact JSON object per line, its last member "chain":
// the XXH3-128 of the previous record's chain (32 zeros before the first) followed by the
// record's bytes without its "chain". Every link is checked, so an edited, moved or dropped
// record is named "file:record".
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rv {

// The head before the first record: 32 zeros.
inline constexpr std::string_view kChainGenesis = "00000000000000000000000000000000";

// The chain after `previous` for a record whose text without "chain" is `body`: XXH3-128 of
// previous's 32 hex digits then body, zero-padded to a multiple of 4 bytes (the Python writer
// digests through the C ABI's binary32 arrays).
std::string chain_next(std::string_view previous, std::string_view body);

struct ChainedRecord {
  std::size_t number = 0;  // 1-based record (= line) number in its file
  std::string where;       // "path:number", for messages
  nlohmann::json value;    // the record, without its "chain"
};

struct ChainedLines {
  std::size_t records = 0;      // complete records read
  std::size_t torn_record = 0;  // a torn last record (still being written), left out; else 0
  std::string head;             // the last complete record's chain
};

// Reads `text` (the file `path`; `what`, e.g. "trail", names it in messages) record by record:
// checks each line's form and its link, then hands the record to `handle`, which throws
// InputError (built with fail_at) where the record's fields are wrong. A malformed record or a
// broken link throws InputError naming "path:record". The last line, when it has no newline
// and any of this fails, is torn (the writer is still writing): left out, torn_record set. An
// empty text, or a torn first record, is an error.
ChainedLines read_chained_lines(const std::string& path, std::string_view text,
                                std::string_view what,
                                const std::function<void(const ChainedRecord&)>& handle);

// Throws InputError("where: what").
[[noreturn]] void fail_at(const std::string& where, const std::string& what);

}  // namespace rv
