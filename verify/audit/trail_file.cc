#include "verify/audit/trail_file.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "verify/common/file_io.h"

namespace rv {
namespace {

constexpr std::string_view kFormat = "reduce-verify trail";

void read_header(TrailFile& trail, const nlohmann::json& record, const std::string& where) {
  if (!record.contains("trail") || record["trail"] != kFormat) {
    fail_at(where, "not a reduce-verify trail (its first record has no \"trail\": \"" +
                       std::string(kFormat) + "\")");
  }
  if (record.value("version", 0) != 1)
    fail_at(where, "trail version " + record["version"].dump() + " is not 1");
  trail.world = world_field(record, where);
  trail.start_step = unsigned_field(record, "start_step", where);
  if (record.contains("parameters")) trail.parameters = unsigned_field(record, "parameters", where);
  trail.digest_kind = string_field(record, "digest", where);
  if (record.contains("hooks") && record["hooks"].is_array()) {
    for (const auto& hook : record["hooks"]) {
      if (hook.is_string()) trail.hooks.push_back(hook.get<std::string>());
    }
  }
}

std::uint64_t next_step(const TrailFile& trail) {
  return trail.steps.empty() ? trail.start_step : trail.steps.back().step + 1;
}

TrailStep read_step(const TrailFile& trail, const nlohmann::json& record,
                    const std::string& where) {
  TrailStep step;
  step.step = unsigned_field(record, "step", where);
  if (step.step != next_step(trail)) {
    fail_at(where, "step " + std::to_string(step.step) + " where step " +
                       std::to_string(next_step(trail)) + " was due");
  }
  if (!record.contains("buckets") || !record["buckets"].is_array()) {
    fail_at(where, "no \"buckets\"");
  }
  for (const auto& item : record["buckets"]) {
    step.buckets.push_back(read_bucket_digests(item, trail.world, where));
  }
  step.params =
      digest_array(record.value("params", nlohmann::json()), trail.world, where, "params");
  if (record.contains("optimizer")) {
    step.optimizer = digest_array(record["optimizer"], trail.world, where, "optimizer");
  }
  return step;
}

void read_record(TrailFile& trail, const ChainedRecord& record) {
  const std::string& where = record.where;
  if (trail.ended) fail_at(where, "a record after the end record");
  if (record.number == 1) {
    read_header(trail, record.value, where);
  } else if (record.value.contains("end")) {
    const std::uint64_t steps = unsigned_field(record.value, "steps", where);
    if (steps != next_step(trail)) {
      fail_at(where, "the end record says " + std::to_string(steps) +
                         " steps, the trail holds steps up to " + std::to_string(next_step(trail)));
    }
    trail.ended = true;
  } else {
    TrailStep step = read_step(trail, record.value, where);
    step.record = record.number;
    trail.steps.push_back(std::move(step));
  }
}

}  // namespace

TrailFile parse_trail(const std::string& path, std::string_view text) {
  TrailFile trail;
  trail.path = path;
  // read_record changes the trail only after every check of the record passed, so a torn
  // last record leaves no trace.
  const ChainedLines lines = read_chained_lines(
      path, text, "trail", [&](const ChainedRecord& record) { read_record(trail, record); });
  trail.torn_record = lines.torn_record;
  trail.records = lines.records;
  trail.head = lines.head;
  return trail;
}

TrailFile read_trail(const std::string& path) {
  return parse_trail(path, read_file_bytes(path, std::uint64_t{1} << 32));
}

}  // namespace rv
