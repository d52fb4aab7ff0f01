#include "verify/audit/record_fields.h"

#include "core/digest/digest.h"
#include "verify/audit/chained_lines.h"

namespace rv {

std::uint64_t unsigned_field(const nlohmann::json& record, const char* key,
                             const std::string& where) {
  if (!record.contains(key) || !record[key].is_number_unsigned()) {
    fail_at(where, std::string("no unsigned integer \"") + key + "\"");
  }
  return record[key].get<std::uint64_t>();
}

std::string string_field(const nlohmann::json& record, const char* key, const std::string& where) {
  if (!record.contains(key) || !record[key].is_string()) {
    fail_at(where, std::string("no string \"") + key + "\"");
  }
  return record[key].get<std::string>();
}

std::vector<std::string> digest_array(const nlohmann::json& value, std::uint32_t world,
                                      const std::string& where, const char* key) {
  if (!value.is_array() || value.size() != world) {
    fail_at(where, std::string("\"") + key + "\" is not an array of " + std::to_string(world) +
                       " digests (one per rank)");
  }
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string() || !parse_digest_hex(item.get<std::string>())) {
      fail_at(where, std::string("\"") + key + "\" holds " + item.dump() +
                         ", not 32 lowercase hex digits");
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

BucketDigests read_bucket_digests(const nlohmann::json& item, std::uint32_t world,
                                  const std::string& where) {
  if (!item.is_object()) fail_at(where, "a bucket that is not an object");
  BucketDigests bucket;
  bucket.index = unsigned_field(item, "index", where);
  bucket.numel = unsigned_field(item, "numel", where);
  bucket.inputs = digest_array(item.value("inputs", nlohmann::json()), world, where, "inputs");
  bucket.results = digest_array(item.value("results", nlohmann::json()), world, where, "results");
  if (item.contains("layout")) {
    const nlohmann::json& layout = item["layout"];
    const bool hex16 = layout.is_string() && layout.get<std::string>().size() == 16 &&
                       layout.get<std::string>().find_first_not_of("0123456789abcdef") ==
                           std::string::npos;
    if (!hex16) fail_at(where, "\"layout\" holds " + layout.dump() + ", not 16 lowercase hex digits");
    bucket.layout = layout.get<std::string>();
  }
  return bucket;
}

std::uint32_t world_field(const nlohmann::json& record, const std::string& where) {
  const std::uint64_t world = unsigned_field(record, "world", where);
  if (world == 0 || world > 65536) fail_at(where, "world " + std::to_string(world));
  return static_cast<std::uint32_t>(world);
}

}  // namespace rv
