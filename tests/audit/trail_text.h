// Builds trail text the way python/reduce_verify/trail.py writes it (compact JSON, "chain"
// last), so the parser and the audit can be tested on records edited one field at a time.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rv::test {

// A digest made from a small number: distinct numbers give distinct digests.
std::string digest_of(int n);

nlohmann::json header(int world, const std::string& hook = "fixed_order_hook");

// A step of `buckets` buckets of 10 elements; every rank's inputs are digest_of(100 b + r)
// plus `seed`, every result digest_of(1000 + b) plus `seed`, parameters digest_of(5000 + s).
nlohmann::json step(int number, int world, int buckets = 2);

inline nlohmann::json end(int steps, int records) {
  return {{"end", true}, {"steps", steps}, {"records", records}};
}

// The records chained, one line each, every line ending in '\n'.
std::string chained(const std::vector<nlohmann::json>& records);

// Chains raw record bodies (for malformed JSON).
std::string chained_bodies(const std::vector<std::string>& bodies);

// A complete trail: header, `steps` steps, end record.
std::vector<nlohmann::json> trail_records(int world, int steps, int buckets = 2);

}  // namespace rv::test
