#include "verify/audit/trail_file.h"

#include <nlohmann/json.hpp>

#include "core/digest/digest.h"
#include "core/error.h"
#include "verify/common/file_io.h"

namespace rv {
namespace {

constexpr std::string_view kFormat = "reduce-verify trail";
constexpr std::string_view kChainKey = ",\"chain\":\"";
constexpr std::size_t kSuffixLength = kChainKey.size() + 32 + 2;  // ,"chain":"<32>"}
const std::string kGenesis(32, '0');

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw InputError(where + ": " + what);
}

std::vector<std::string> digests(const nlohmann::json& value, std::uint32_t world,
                                 const std::string& where, const char* key) {
  if (!value.is_array() || value.size() != world) {
    fail(where, std::string("\"") + key + "\" is not an array of " + std::to_string(world) +
                    " digests (one per rank)");
  }
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string() || !parse_digest_hex(item.get<std::string>())) {
      fail(where,
           std::string("\"") + key + "\" holds " + item.dump() + ", not 32 lowercase hex digits");
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::uint64_t unsigned_field(const nlohmann::json& record, const char* key,
                             const std::string& where) {
  if (!record.contains(key) || !record[key].is_number_unsigned()) {
    fail(where, std::string("no unsigned integer \"") + key + "\"");
  }
  return record[key].get<std::uint64_t>();
}

void read_header(TrailFile& trail, const nlohmann::json& record, const std::string& where) {
  if (!record.contains("trail") || record["trail"] != kFormat) {
    fail(where, "not a reduce-verify trail (its first record has no \"trail\": \"" +
                    std::string(kFormat) + "\")");
  }
  if (record.value("version", 0) != 1)
    fail(where, "trail version " + record["version"].dump() + " is not 1");
  const std::uint64_t world = unsigned_field(record, "world", where);
  if (world == 0 || world > 65536) fail(where, "world " + std::to_string(world));
  trail.world = static_cast<std::uint32_t>(world);
  trail.start_step = unsigned_field(record, "start_step", where);
  if (record.contains("parameters")) trail.parameters = unsigned_field(record, "parameters", where);
  if (!record.contains("digest") || !record["digest"].is_string()) fail(where, "no \"digest\"");
  trail.digest_kind = record["digest"].get<std::string>();
  if (record.contains("hooks") && record["hooks"].is_array()) {
    for (const auto& hook : record["hooks"]) {
      if (hook.is_string()) trail.hooks.push_back(hook.get<std::string>());
    }
  }
}

TrailStep read_step(const TrailFile& trail, const nlohmann::json& record,
                    const std::string& where) {
  TrailStep step;
  step.step = unsigned_field(record, "step", where);
  const std::uint64_t expected =
      trail.steps.empty() ? trail.start_step : trail.steps.back().step + 1;
  if (step.step != expected) {
    fail(where, "step " + std::to_string(step.step) + " where step " + std::to_string(expected) +
                    " was due");
  }
  if (!record.contains("buckets") || !record["buckets"].is_array()) fail(where, "no \"buckets\"");
  for (const auto& item : record["buckets"]) {
    if (!item.is_object()) fail(where, "a bucket that is not an object");
    TrailBucket bucket;
    bucket.index = unsigned_field(item, "index", where);
    bucket.numel = unsigned_field(item, "numel", where);
    bucket.inputs = digests(item.value("inputs", nlohmann::json()), trail.world, where, "inputs");
    bucket.results =
        digests(item.value("results", nlohmann::json()), trail.world, where, "results");
    step.buckets.push_back(std::move(bucket));
  }
  step.params = digests(record.value("params", nlohmann::json()), trail.world, where, "params");
  if (record.contains("optimizer")) {
    step.optimizer = digests(record["optimizer"], trail.world, where, "optimizer");
  }
  return step;
}

}  // namespace

std::string chain_next(std::string_view previous, std::string_view body) {
  std::string bytes;
  bytes.reserve(previous.size() + body.size() + 3);
  bytes.append(previous).append(body);
  bytes.append((4 - bytes.size() % 4) % 4, '\0');  // the Python side digests binary32 arrays
  return digest_bytes(bytes.data(), bytes.size()).hex();
}

TrailFile parse_trail(const std::string& path, std::string_view text) {
  TrailFile trail;
  trail.path = path;
  trail.head = kGenesis;
  if (text.empty()) throw InputError(path + ": an empty trail (no header record)");
  std::size_t begin = 0, number = 0;
  while (begin < text.size()) {
    ++number;
    const std::string where = path + ":" + std::to_string(number);
    const std::size_t newline = text.find('\n', begin);
    const bool last_unterminated = newline == std::string_view::npos;
    const std::string_view line =
        text.substr(begin, last_unterminated ? std::string_view::npos : newline - begin);
    begin = last_unterminated ? text.size() : newline + 1;
    try {
      if (trail.ended) fail(where, "a record after the end record");
      if (line.size() < kSuffixLength + 2 ||
          line.substr(line.size() - kSuffixLength, kChainKey.size()) != kChainKey ||
          line.substr(line.size() - 2) != "\"}") {
        fail(where, "does not end in ,\"chain\":\"<32 hex digits>\"}");
      }
      const std::string chain(line.substr(line.size() - 34, 32));
      const std::string body = std::string(line.substr(0, line.size() - kSuffixLength)) + "}";
      nlohmann::json record;
      try {
        record = nlohmann::json::parse(body);
      } catch (const nlohmann::json::exception& error) {
        fail(where, std::string("not JSON: ") + error.what());
      }
      if (!record.is_object()) fail(where, "not a JSON object");
      if (!parse_digest_hex(chain)) fail(where, "its chain is not 32 lowercase hex digits");
      const std::string expected = chain_next(trail.head, body);
      if (chain != expected) {
        fail(where, "the chain is broken: the record says " + chain +
                        ", the records up to it "
                        "give " +
                        expected +
                        " (this record or the one before was edited, moved "
                        "or dropped)");
      }
      if (number == 1) {
        read_header(trail, record, where);
      } else if (record.contains("end")) {
        const std::uint64_t steps = unsigned_field(record, "steps", where);
        const std::uint64_t seen =
            trail.steps.empty() ? trail.start_step : trail.steps.back().step + 1;
        if (steps != seen) {
          fail(where, "the end record says " + std::to_string(steps) +
                          " steps, the trail "
                          "holds steps up to " +
                          std::to_string(seen));
        }
        trail.ended = true;
      } else {
        TrailStep step = read_step(trail, record, where);
        step.record = number;
        trail.steps.push_back(std::move(step));
      }
      trail.head = chain;
      trail.records = number;
    } catch (const InputError&) {
      if (!last_unterminated || number == 1) throw;
      trail.torn_record = number;  // still being written: audit the complete records
    }
  }
  return trail;
}

TrailFile read_trail(const std::string& path) {
  return parse_trail(path, read_file_bytes(path, std::uint64_t{1} << 32));
}

}  // namespace rv
