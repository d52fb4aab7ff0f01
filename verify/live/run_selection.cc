#include "verify/live/run_selection.h"

#include "core/error.h"

namespace rv {

const std::map<std::string, TransportChoice>& transport_choice_names() {
  static const std::map<std::string, TransportChoice> names = {
      {"auto", TransportChoice::kAuto},
      {"gloo", TransportChoice::kGloo},
      {"nccl", TransportChoice::kNccl},
      {"cuda-loopback", TransportChoice::kCudaLoopback}};
  return names;
}

const std::map<std::string, ContractSelection>& contract_selection_names() {
  static const std::map<std::string, ContractSelection> names = {
      {"fixed-order", ContractSelection::kFixedOrder},
      {"library-sum", ContractSelection::kLibrarySum},
      {"exact", ContractSelection::kExact},
      {"both", ContractSelection::kBoth},
      {"all", ContractSelection::kAll}};
  return names;
}

namespace {

template <typename Enum>
const char* name_in(const std::map<std::string, Enum>& names, Enum value) {
  for (const auto& [name, v] : names) {
    if (v == value) return name.c_str();
  }
  throw InternalError("an enum value with no name");
}

}  // namespace

const char* to_string(TransportChoice choice) { return name_in(transport_choice_names(), choice); }

const char* to_string(TransportKind kind) {
  switch (kind) {
    case TransportKind::kGloo:
      return "gloo";
    case TransportKind::kNccl:
      return "nccl";
    case TransportKind::kCudaLoopback:
      return "cuda-loopback";
  }
  throw InternalError("a transport kind with no name");
}

const char* to_string(ContractSelection selection) {
  return name_in(contract_selection_names(), selection);
}

ContractSelection selection_of(Contract contract) {
  switch (contract) {
    case Contract::kFixedOrder:
      return ContractSelection::kFixedOrder;
    case Contract::kLibrarySum:
      return ContractSelection::kLibrarySum;
    case Contract::kExact:
      return ContractSelection::kExact;
  }
  throw InternalError("a contract with no selection");
}

std::vector<Contract> contracts_of(ContractSelection selection) {
  switch (selection) {
    case ContractSelection::kFixedOrder:
      return {Contract::kFixedOrder};
    case ContractSelection::kLibrarySum:
      return {Contract::kLibrarySum};
    case ContractSelection::kExact:
      return {Contract::kExact};
    case ContractSelection::kBoth:
      return {Contract::kFixedOrder, Contract::kLibrarySum};
    case ContractSelection::kAll:
      return {Contract::kFixedOrder, Contract::kLibrarySum, Contract::kExact};
  }
  throw InternalError("a contract selection with no contracts");
}

Contract inputs_contract_of(ContractSelection selection) {
  if (selection == ContractSelection::kLibrarySum) {
    throw InputError(
        "--inputs: library-sum has no portable digest to replay; give "
        "--contract fixed-order or exact");
  }
  return selection == ContractSelection::kExact ? Contract::kExact : Contract::kFixedOrder;
}

}  // namespace rv
