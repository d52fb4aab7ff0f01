#include "core/contract.h"

namespace rv {

std::string_view to_string(Contract contract) {
  switch (contract) {
    case Contract::kFixedOrder:
      return "fixed-order";
    case Contract::kLibrarySum:
      return "library-sum";
    case Contract::kExact:
      return "exact";
  }
  return "?";
}

std::string_view to_string(Op op) {
  switch (op) {
    case Op::kSum:
      return "sum";
    case Op::kMean:
      return "mean";
  }
  return "?";
}

std::string_view to_string(Collective coll) {
  switch (coll) {
    case Collective::kAllReduce:
      return "all-reduce";
    case Collective::kReduceScatter:
      return "reduce-scatter";
  }
  return "?";
}

std::optional<Contract> parse_contract(std::string_view text) {
  if (text == "fixed-order") return Contract::kFixedOrder;
  if (text == "library-sum") return Contract::kLibrarySum;
  if (text == "exact") return Contract::kExact;
  return std::nullopt;
}

std::optional<Op> parse_op(std::string_view text) {
  if (text == "sum") return Op::kSum;
  if (text == "mean") return Op::kMean;
  return std::nullopt;
}

std::optional<Collective> parse_collective(std::string_view text) {
  if (text == "all-reduce") return Collective::kAllReduce;
  if (text == "reduce-scatter") return Collective::kReduceScatter;
  return std::nullopt;
}

}  // namespace rv
