// The live gate over fault-injecting transports: `run`'s own per-rank pipeline
// (verify/live/rank_cases.h: agree on the case, reduce under the contract, digest, and rank
// 0's decide_verdict against the committed goldens) on a thread-per-rank world whose every
// rank talks through a FaultyTransport around a real one (Gloo where this build has it).
// Each case under each contract is one span: the mutant fires at most once in it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/contract.h"
#include "tests/mutation/fault_transport.h"
#include "tests/thread_world/world_transport.h"
#include "verify/live/run_plan.h"
#include "verify/live/run_results.h"

namespace rv::test {

// What the gate concluded for one case under one contract with one mutant at one site.
struct GateOutcome {
  CaseId id;  // the data case (contract fixed-order)
  Contract contract = Contract::kFixedOrder;
  bool reached = false;  // the site's call happened on some rank
  bool fired = false;    // the victim applied the mutant
  bool changed = false;  // and it changed bytes
  std::string what;      // what the victim's transport did
  bool error = false;    // a rank threw: the world stopped (run exits 2 or 3)
  Verdict verdict = Verdict::kSkipped;
  int exit_code = 0;   // what `run` exits with for this case alone: 0, 1, 2 or 3
  std::string detail;  // the verdict's detail, or "rank r: <error>"

  bool caught() const { return exit_code != 0; }
};

// The committed golden cases the matrix runs: op=sum, seed 1, n = 4099, every distribution,
// W = 2..5, with their fixed-order and exact goldens from golden/*.xxh128.
std::vector<PlannedCase> matrix_cases();

// Runs `cases` (all of one W) under `contract` with `mutant` at `site` (the victim is rank
// W − 1), over `transport`. A world that stops on an error is restarted for the next case,
// as the supervisor would report that case and a fresh run would go on. `mutate` false: the
// same worlds with the wrapper in place and no fault (the harness's own baseline).
std::vector<GateOutcome> run_gate_with_fault(WorldTransport transport, Mutant mutant, Site site,
                                             Contract contract,
                                             const std::vector<PlannedCase>& cases,
                                             bool mutate = true);

}  // namespace rv::test
