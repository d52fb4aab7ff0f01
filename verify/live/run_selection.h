// What `run` was asked to run on, and under which contracts, as typed values parsed once at
// the command line (verify/cli/cmd_run.cc, through the name tables below); the run pipeline
// never compares option strings.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/contract.h"

namespace rv {

// --transport: auto is resolved per process (resolve_transport in transport_factory.h).
enum class TransportChoice { kAuto, kGloo, kNccl, kCudaLoopback };
// A resolved transport.
enum class TransportKind { kGloo, kNccl, kCudaLoopback };

// --contract: one contract, both (fixed-order and library-sum) or all three.
enum class ContractSelection { kFixedOrder, kLibrarySum, kExact, kBoth, kAll };

// The command-line spellings: "auto", "gloo", "nccl", "cuda-loopback"; "fixed-order",
// "library-sum", "exact", "both", "all".
const std::map<std::string, TransportChoice>& transport_choice_names();
const std::map<std::string, ContractSelection>& contract_selection_names();
const char* to_string(TransportChoice choice);
const char* to_string(TransportKind kind);
const char* to_string(ContractSelection selection);

// The selection of one contract.
ContractSelection selection_of(Contract contract);
// The contracts a selection runs, in report order.
std::vector<Contract> contracts_of(ContractSelection selection);
// The contract an --inputs run reduces the files under: exact when the selection is exact,
// otherwise fixed-order (all and both included). Throws InputError for library-sum, which
// has no digest to replay against.
Contract inputs_contract_of(ContractSelection selection);

}  // namespace rv
