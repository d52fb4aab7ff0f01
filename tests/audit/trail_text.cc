#include "tests/audit/trail_text.h"

#include <cstdio>

#include "verify/audit/trail_file.h"

namespace rv::test {

std::string digest_of(int n) {
  char hex[33];
  std::snprintf(hex, sizeof hex, "%032x", n);
  return hex;
}

nlohmann::json header(int world, const std::string& hook) {
  return {{"trail", "reduce-verify trail"},
          {"version", 1},
          {"world", world},
          {"hooks", {hook}},
          {"digest", "xxh128"},
          {"start_step", 0}};
}

nlohmann::json step(int number, int world, int buckets) {
  nlohmann::json record = {{"step", number}, {"buckets", nlohmann::json::array()}};
  for (int b = 0; b < buckets; ++b) {
    nlohmann::json inputs = nlohmann::json::array(), results = nlohmann::json::array();
    for (int r = 0; r < world; ++r) {
      inputs.push_back(digest_of(100 * b + r + 10000 * number));
      results.push_back(digest_of(1000 + b + 10000 * number));
    }
    record["buckets"].push_back(
        {{"index", b}, {"numel", 10}, {"inputs", inputs}, {"results", results}});
  }
  nlohmann::json params = nlohmann::json::array();
  for (int r = 0; r < world; ++r) params.push_back(digest_of(5000 + number));
  record["params"] = params;
  return record;
}

std::string chained_bodies(const std::vector<std::string>& bodies) {
  std::string head(32, '0'), text;
  for (const std::string& body : bodies) {
    head = chain_next(head, body);
    text += body.substr(0, body.size() - 1) + ",\"chain\":\"" + head + "\"}\n";
  }
  return text;
}

std::string chained(const std::vector<nlohmann::json>& records) {
  std::vector<std::string> bodies;
  for (const auto& record : records) bodies.push_back(record.dump());
  return chained_bodies(bodies);
}

std::vector<nlohmann::json> trail_records(int world, int steps, int buckets) {
  std::vector<nlohmann::json> records{header(world)};
  for (int s = 0; s < steps; ++s) records.push_back(step(s, world, buckets));
  records.push_back(end(steps, steps + 1));
  return records;
}

}  // namespace rv::test
