// The fields the digest trail and the Recorder's manifest share (docs/DESIGN.md §12): their
// bucket, {index, numel, inputs, results} with one digest per rank, and the typed reads both
// parsers make, each throwing InputError that names "file:record" and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rv {

struct BucketDigests {
  std::uint64_t index = 0, numel = 0;        // DDP's bucket index, its element count
  std::vector<std::string> inputs, results;  // one hex digest per rank
  // Which parameters the bucket holds, in which order (a trail's optional "layout", 16 hex
  // digits; "" when the record has none): DDP's first iteration and its rebuilt buckets can
  // hold the same count in another order.
  std::string layout;
};

// record[key] as an unsigned integer.
std::uint64_t unsigned_field(const nlohmann::json& record, const char* key,
                             const std::string& where);

// record[key] as a string.
std::string string_field(const nlohmann::json& record, const char* key, const std::string& where);

// `value` as an array of `world` digests of 32 lowercase hex digits (`key` names it).
std::vector<std::string> digest_array(const nlohmann::json& value, std::uint32_t world,
                                      const std::string& where, const char* key);

// A bucket object: index, numel, and `world` input and result digests.
BucketDigests read_bucket_digests(const nlohmann::json& item, std::uint32_t world,
                                  const std::string& where);

// A header's "world": 1 … 65536.
std::uint32_t world_field(const nlohmann::json& record, const std::string& where);

}  // namespace rv
