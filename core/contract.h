// The reduction contracts and ops of docs/DESIGN.md §2, and their canonical spellings (used in
// case ids, reports and on the command line).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rv {

enum class Contract : std::uint8_t {
  kFixedOrder,  // our own fold, ascending rank order: portable bits
  kLibrarySum,  // the transport library's own sum: no portability promise
  kExact,       // the correctly rounded sum, via the library's integer all-reduce
};

enum class Op : std::uint8_t {
  kSum,
  kMean,  // sum × (1.0f / W), never pre-scaled addends
};

// What a case reduces into (docs/DESIGN.md §2.6): every rank's whole arena, or rank p's shard
// of FSDP's padded plan. Each element has the same bits under both.
enum class Collective : std::uint8_t {
  kAllReduce,
  kReduceScatter,
};

std::string_view to_string(Contract contract);
std::string_view to_string(Op op);
std::string_view to_string(Collective coll);
std::optional<Contract> parse_contract(std::string_view text);
std::optional<Op> parse_op(std::string_view text);
std::optional<Collective> parse_collective(std::string_view text);

}  // namespace rv
