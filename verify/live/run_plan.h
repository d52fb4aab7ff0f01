// What `reduce-verify run` was asked to do: its options, the cases it selected from the
// golden files (or the embedded suite), and how they split into worlds.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/case_id.h"
#include "core/digest/digest.h"
#include "verify/live/run_selection.h"

namespace rv {

// --hostname's default: each rank's Gloo bind address is chosen when it starts, 127.0.0.1
// when all ranks share one network namespace, else an address every other host can reach
// (core/transport/gloo/bind_address.h).
inline constexpr const char* kAutoHostname = "auto";

struct RunOptions {
  TransportChoice transport = TransportChoice::kAuto;
  ContractSelection contract = ContractSelection::kAll;
  std::vector<std::string> golden_files;   // empty: the embedded committed suite
  std::vector<std::string> case_ids;       // --case: only these
  std::vector<std::uint32_t> worlds;       // --world: only cases of these W
  std::optional<std::uint32_t> max_world;  // larger worlds are listed as skipped
  std::uint32_t iters = 1;
  double timeout_seconds = 60;
  std::string report_path;
  std::string junit_path;
  std::vector<std::string> inputs;       // --inputs: raw per-rank files instead of cases
  std::string op = "sum";                // with --inputs
  std::vector<std::string> dtypes;       // --dtype: the cases of these dtypes (empty: all);
                                         // with --inputs the files' one (empty: f32)
  std::string coll;                      // --coll: the cases of this collective (empty: all);
                                         // with --inputs the one reduced (empty: all-reduce)
  std::string rendezvous;                // shared directory (or REDUCE_VERIFY_RENDEZVOUS)
  std::string job_id;                    // per-launch id (or REDUCE_VERIFY_JOB_ID, launcher ids)
  std::string hostname = kAutoHostname;  // the address Gloo binds (auto: agreed per rank)
  bool accuracy = false;                 // rank 0 measures each result's error against exact

  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(static_cast<std::int64_t>(timeout_seconds * 1000));
  }
  std::vector<Contract> contracts() const { return contracts_of(contract); }
  // run_selection.h: exact when --contract exact, otherwise fixed-order.
  Contract inputs_contract() const { return inputs_contract_of(contract); }
  Collective inputs_coll() const {
    return parse_collective(coll).value_or(Collective::kAllReduce);
  }
  DType inputs_dtype() const {
    return dtypes.empty() ? DType::kF32 : parse_dtype(dtypes[0]).value_or(DType::kF32);
  }
};

struct PlannedCase {
  CaseId id;              // contract fixed-order: the data and its golden
  Digest expected;        // the fixed-order golden digest
  Digest expected_exact;  // the exact contract's golden digest (when exact runs)
  std::string source;     // "golden/fixed-order.xxh128:12"

  // The golden a result under `contract` is held to: exact's own, else fixed-order's
  // (library-sum is compared with fixed-order).
  const Digest& expected_for(Contract contract) const {
    return contract == Contract::kExact ? expected_exact : expected;
  }
};

// The selected cases, in golden-file order: one per data case (its fixed-order and exact
// lines are matched by data; a digest a golden file lacks is derived from the case id).
// Throws InputError on unreadable or malformed golden files (named file:line), a --case
// that does not parse, or an empty selection.
std::vector<PlannedCase> plan_cases(const RunOptions& options);

// Cases grouped by world size, ascending W.
std::map<std::uint32_t, std::vector<PlannedCase>> group_by_world(
    const std::vector<PlannedCase>& cases);

}  // namespace rv
