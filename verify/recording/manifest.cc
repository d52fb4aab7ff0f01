#include "verify/recording/manifest.h"

#include <nlohmann/json.hpp>

#include "core/case_id.h"
#include "core/error.h"
#include "verify/audit/chained_lines.h"
#include "verify/common/file_io.h"

namespace rv {
namespace {

constexpr std::string_view kFormat = "reduce-verify torch recording";
constexpr int kVersion = 4;
constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{1} << 30;

// Format 3 (before the manifest was chained) wrote plain JSON lines with a "format" member:
// named as such, so its owner knows to use the lines' own replay commands.
void refuse_format_3(const std::string& path, std::string_view text) {
  const std::string_view first = text.substr(0, text.find('\n'));
  const nlohmann::json record = nlohmann::json::parse(first, nullptr, false);
  if (record.is_object() && record.contains("format") && record["format"].is_string() &&
      record["format"].get<std::string>().rfind(kFormat, 0) == 0) {
    fail_at(path + ":1", "a recording of format \"" + record["format"].get<std::string>() +
                             "\", which is not chained: replay reads format " +
                             std::to_string(kVersion) +
                             " (reduce_verify 4 and later); each of its lines' own \"replay\" "
                             "commands (digest --inputs) still reduces its bucket");
  }
}

void read_header(RecordingManifest& manifest, const nlohmann::json& record,
                 const std::string& where) {
  if (!record.contains("recording") || record["recording"] != kFormat) {
    fail_at(where, "not a reduce-verify recording (its first record has no \"recording\": \"" +
                       std::string(kFormat) + "\")");
  }
  if (record.value("version", 0) != kVersion) {
    fail_at(where, "recording version " + record["version"].dump() + " is not " +
                       std::to_string(kVersion));
  }
  const std::uint32_t world = world_field(record, where);
  if (world > kMaxWorld) {
    fail_at(where, "world " + std::to_string(world) + " is more ranks than the " +
                       std::to_string(kMaxWorld) + " a replay reduces");
  }
  const std::string digest = string_field(record, "digest", where);
  if (digest != "xxh128") {
    fail_at(where, "digest \"" + digest + "\": a recording's digests are xxh128, the flat digest");
  }
  if (record.contains("byte_order") && record["byte_order"] != "little") {
    fail_at(where, "byte_order " + record["byte_order"].dump() + " (the files are little-endian)");
  }
  manifest.world = world;
}

// A path the Recorder wrote: relative, inside the recording directory.
std::string rank_file(const nlohmann::json& value, const std::string& where) {
  if (!value.is_string() || value.get<std::string>().empty()) {
    fail_at(where, "\"files\" holds " + value.dump() + ", not a file name");
  }
  const std::string file = value.get<std::string>();
  bool outside = file[0] == '/' || file.find('\0') != std::string::npos;
  std::size_t begin = 0;
  while (begin <= file.size() && !outside) {
    const std::size_t end = std::min(file.find('/', begin), file.size());
    outside = file.compare(begin, end - begin, "..") == 0;
    begin = end + 1;
  }
  if (outside) {
    fail_at(where, "rank file \"" + file + "\" is not a relative path inside the recording");
  }
  return file;
}

template <typename T>
T parsed(std::optional<T> value, const char* key, const std::string& text,
         const std::string& where) {
  if (!value) fail_at(where, std::string("unknown ") + key + " \"" + text + "\"");
  return *value;
}

void read_buckets(RecordingManifest& manifest, const ChainedRecord& record) {
  const nlohmann::json& value = record.value;
  const std::string& where = record.where;
  RecordedBucket common;
  common.record = record.number;
  common.where = where;
  common.step = unsigned_field(value, "step", where);
  const std::string contract = string_field(value, "contract", where);
  const std::string op = string_field(value, "op", where);
  const std::string dtype = string_field(value, "dtype", where);
  common.contract = parsed(parse_contract(contract), "contract", contract, where);
  common.op = parsed(parse_op(op), "op", op, where);
  common.dtype = parsed(parse_dtype(dtype), "dtype", dtype, where);
  if (!value.contains("buckets") || !value["buckets"].is_array() || value["buckets"].empty()) {
    fail_at(where, "no \"buckets\" (an array of the recorded buckets)");
  }
  std::vector<RecordedBucket> buckets;
  for (const auto& item : value["buckets"]) {
    RecordedBucket bucket = common;
    bucket.digests = read_bucket_digests(item, manifest.world, where);
    if (bucket.digests.numel * manifest.world > kMaxTotalElements) {
      fail_at(where, std::to_string(manifest.world) + " × " + std::to_string(bucket.digests.numel) +
                         " values is more than the maximum " + std::to_string(kMaxTotalElements));
    }
    const nlohmann::json files = item.value("files", nlohmann::json());
    if (!files.is_array() || files.size() != manifest.world) {
      fail_at(where, "\"files\" is not an array of " + std::to_string(manifest.world) +
                         " file names (one per rank)");
    }
    for (const auto& file : files) bucket.files.push_back(rank_file(file, where));
    buckets.push_back(std::move(bucket));
  }
  for (auto& bucket : buckets) manifest.buckets.push_back(std::move(bucket));
}

void read_record(RecordingManifest& manifest, const ChainedRecord& record) {
  if (manifest.ended) fail_at(record.where, "a record after the end record");
  if (record.number == 1) {
    read_header(manifest, record.value, record.where);
  } else if (record.value.contains("end")) {
    const std::uint64_t records = unsigned_field(record.value, "records", record.where);
    if (records != record.number - 1) {
      fail_at(record.where, "the end record says " + std::to_string(records) +
                                " records came before it, the manifest holds " +
                                std::to_string(record.number - 1));
    }
    manifest.ended = true;
  } else {
    read_buckets(manifest, record);
  }
}

}  // namespace

RecordingManifest parse_manifest(const std::string& path, const std::string& directory,
                                 std::string_view text) {
  refuse_format_3(path, text);
  RecordingManifest manifest;
  manifest.path = path;
  manifest.directory = directory;
  // read_record changes the manifest only after every check of the record passed, so a torn
  // last record leaves no trace.
  const ChainedLines lines = read_chained_lines(
      path, text, "manifest", [&](const ChainedRecord& record) { read_record(manifest, record); });
  manifest.torn_record = lines.torn_record;
  manifest.records = lines.records;
  return manifest;
}

RecordingManifest read_manifest(const std::string& directory) {
  const std::string path = directory + "/" + std::string(kManifestName);
  return parse_manifest(path, directory, read_file_bytes(path, kMaxManifestBytes));
}

}  // namespace rv
