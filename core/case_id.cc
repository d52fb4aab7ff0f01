#include "core/case_id.h"

#include <array>
#include <limits>

#include "core/error.h"

namespace rv {

bool CaseId::operator==(const CaseId& o) const {
  return contract == o.contract && op == o.op && world == o.world && count == o.count &&
         dist == o.dist && seed == o.seed && gen == o.gen && dtype == o.dtype &&
         coll == o.coll;
}

std::string format_case_id(const CaseId& id) {
  std::string text;
  text.reserve(96);
  text += "contract=";
  text += to_string(id.contract);
  text += ",op=";
  text += to_string(id.op);
  if (id.coll != Collective::kAllReduce) {  // absent means all-reduce: older ids keep their text
    text += ",coll=";
    text += to_string(id.coll);
  }
  if (id.dtype != DType::kF32) {  // absent means f32, so every binary32 id keeps its text
    text += ",dtype=";
    text += to_string(id.dtype);
  }
  text += ",w=" + std::to_string(id.world);
  text += ",n=" + std::to_string(id.count);
  text += ",dist=";
  text += to_string(id.dist);
  text += ",seed=" + std::to_string(id.seed);
  text += ",gen=" + std::to_string(id.gen);
  return text;
}

namespace {

// coll and dtype are the optional keys: absent for the all-reduce and for f32.
constexpr std::array<std::string_view, 9> kKeys = {"contract", "op",   "coll", "dtype", "w",
                                                   "n",        "dist", "seed", "gen"};

bool is_optional_key(std::string_view key) { return key == "coll" || key == "dtype"; }

std::string quoted(std::string_view text) {
  constexpr std::size_t kShown = 40;
  std::string out = "'";
  for (char c : text.substr(0, kShown)) {
    out += (c >= 0x20 && c < 0x7F) ? c : '?';
  }
  if (text.size() > kShown) out += "...";
  return out + "'";
}

std::uint64_t parse_decimal(std::string_view key, std::string_view value, std::uint64_t max) {
  if (value.empty()) throw InputError("case id: field '" + std::string(key) + "' is empty");
  if (value.size() > 1 && value[0] == '0') {
    throw InputError("case id: field '" + std::string(key) +
                     "' has a leading zero: " + quoted(value));
  }
  std::uint64_t result = 0;
  for (char c : value) {
    if (c < '0' || c > '9') {
      throw InputError("case id: field '" + std::string(key) +
                       "' is not a decimal number: " + quoted(value));
    }
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (result > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
      throw InputError("case id: field '" + std::string(key) +
                       "' overflows 64 bits: " + quoted(value));
    }
    result = result * 10 + digit;
  }
  if (result > max) {
    throw InputError("case id: field '" + std::string(key) + "' = " + std::to_string(result) +
                     " is above its maximum " + std::to_string(max));
  }
  return result;
}

}  // namespace

void validate_case_id(const CaseId& id) {
  if (id.world < 1 || id.world > kMaxWorld) {
    throw InputError("case id: w = " + std::to_string(id.world) + " is outside [1, " +
                     std::to_string(kMaxWorld) + "]");
  }
  if (id.count > kMaxCount) {
    throw InputError("case id: n = " + std::to_string(id.count) + " is above the maximum " +
                     std::to_string(kMaxCount));
  }
  if (id.count * id.world > kMaxTotalElements) {
    throw InputError("case id: w × n = " + std::to_string(id.count * id.world) +
                     " elements is above the maximum " + std::to_string(kMaxTotalElements));
  }
  if (!is_known_generator(id.gen)) {
    throw InputError(
        "case id: gen = " + std::to_string(id.gen) +
        " is not a generator this build knows (latest: " + std::to_string(kLatestGenerator) + ")");
  }
}

CaseId parse_case_id(std::string_view text) {
  CaseId id;
  std::string_view rest = text;
  for (std::size_t field = 0; field < kKeys.size(); ++field) {
    const std::string_view key = kKeys[field];
    const std::size_t comma = rest.find(',');
    const std::string_view pair = rest.substr(0, comma);
    const std::size_t equals = pair.find('=');
    if (is_optional_key(key) && pair.substr(0, equals) != key) continue;  // absent: default
    if (equals == std::string_view::npos || pair.substr(0, equals) != key) {
      throw InputError("case id: expected field " + std::to_string(field + 1) + " to be '" +
                       std::string(key) + "=…', found " + quoted(pair) + " in " + quoted(text));
    }
    const std::string_view value = pair.substr(equals + 1);
    if (key == "contract") {
      const auto contract = parse_contract(value);
      if (!contract) {
        throw InputError("case id: contract " + quoted(value) +
                         " is not fixed-order, library-sum or exact");
      }
      id.contract = *contract;
    } else if (key == "op") {
      const auto op = parse_op(value);
      if (!op) throw InputError("case id: op " + quoted(value) + " is not sum or mean");
      id.op = *op;
    } else if (key == "coll") {
      const auto coll = parse_collective(value);
      if (!coll || *coll == Collective::kAllReduce) {
        throw InputError("case id: coll " + quoted(value) +
                         (coll ? " is written by leaving coll out (the canonical id of an "
                                 "all-reduce)"
                               : " is not reduce-scatter (an all-reduce: leave coll out)"));
      }
      id.coll = *coll;
    } else if (key == "dtype") {
      const auto dtype = parse_dtype(value);
      if (!dtype || *dtype == DType::kF32) {
        throw InputError("case id: dtype " + quoted(value) +
                         (dtype ? " is written by leaving dtype out (the canonical id of f32)"
                                : " is not bf16 or f16 (f32: leave dtype out)"));
      }
      id.dtype = *dtype;
    } else if (key == "w") {
      id.world = static_cast<std::uint32_t>(parse_decimal(key, value, kMaxWorld));
    } else if (key == "n") {
      id.count = parse_decimal(key, value, kMaxCount);
    } else if (key == "dist") {
      const auto dist = parse_distribution(value);
      if (!dist) {
        throw InputError("case id: dist " + quoted(value) +
                         " is not one of normal, wide, cancel, exact, special");
      }
      id.dist = *dist;
    } else if (key == "seed") {
      id.seed = parse_decimal(key, value, std::numeric_limits<std::uint64_t>::max());
    } else if (key == "gen") {
      id.gen = static_cast<std::uint32_t>(parse_decimal(key, value, 1u << 20));
    }
    const bool last = field + 1 == kKeys.size();
    if (last && comma != std::string_view::npos) {
      throw InputError("case id: unexpected text after gen: " + quoted(rest.substr(comma)));
    }
    if (!last && comma == std::string_view::npos) {
      throw InputError("case id: missing fields after '" + std::string(key) + "' in " +
                       quoted(text));
    }
    rest = last ? std::string_view() : rest.substr(comma + 1);
  }
  validate_case_id(id);
  return id;
}

}  // namespace rv
