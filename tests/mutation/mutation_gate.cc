#include "tests/mutation/mutation_gate.h"

#include <algorithm>

#include "core/arena.h"
#include "core/error.h"
#include "core/reducer/exact_device.h"
#include "core/reducer/exact_reducer.h"
#include "core/reducer/fixed_order_device.h"
#include "verify/common/exit_codes.h"
#include "verify/live/rank_cases.h"

namespace rv::test {

namespace {

// The committed golden cases of `ids` (op=sum, n = 4099, seed `seed`), with their fixed-order
// and exact goldens read from golden/*.xxh128.
std::vector<PlannedCase> committed_cases(const std::vector<std::uint32_t>& worlds,
                                         const std::vector<Distribution>& dists,
                                         std::uint64_t seed) {
  RunOptions options;
  options.contract = ContractSelection::kAll;
  options.golden_files = {RV_SOURCE_DIR "/golden/fixed-order.xxh128",
                          RV_SOURCE_DIR "/golden/exact.xxh128"};
  for (std::uint32_t world : worlds) {
    for (Distribution dist : dists) {
      CaseId id;
      id.op = Op::kSum;
      id.world = world;
      id.count = 4099;
      id.dist = dist;
      id.seed = seed;
      options.case_ids.push_back(format_case_id(id));
    }
  }
  std::vector<PlannedCase> cases = plan_cases(options);
  for (const PlannedCase& c : cases) {
    // Every digest must come from the committed files, not be derived here.
    if (c.source.rfind(RV_SOURCE_DIR "/golden/", 0) != 0) {
      throw InternalError("mutation matrix: " + format_case_id(c.id) + " is not a committed case");
    }
  }
  return cases;
}

}  // namespace

std::vector<PlannedCase> matrix_cases() {
  return committed_cases(
      {2, 3, 4, 5},
      std::vector<Distribution>(std::begin(kAllDistributions), std::end(kAllDistributions)), 1);
}

namespace {

// The exit code `run` maps an error to (verify/common/exit_codes.h).
int exit_code_of(const std::exception_ptr& error) {
  return is_error<InputError>(error) ? kExitBadInput : kExitRuntimeFailure;
}

}  // namespace

std::vector<GateOutcome> run_gate_with_fault(WorldTransport transport, Mutant mutant, Site site,
                                             Contract contract,
                                             const std::vector<PlannedCase>& cases, bool mutate) {
  const std::uint32_t world = cases.front().id.world;
  const FaultPlan plan{mutant, site, world - 1};
  RunOptions options;
  options.contract = selection_of(contract);
  // The exact contract's own sites are its digits dataflow's calls; everywhere else it runs
  // as `run` runs it on the host (the owners).
  RankReducerOptions reducer_options;
  reducer_options.exact = ExactOptions::for_device(host_exact_device());
  if (site == Site::kWindowMax || site == Site::kDigitSum) {
    reducer_options.exact->dataflow = ExactDataflow::kDigits;
  }
  std::vector<FaultMemory> memory(world);
  std::vector<GateOutcome> outcomes(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    outcomes[i].id = cases[i].id;
    outcomes[i].contract = contract;
  }

  // Every rank runs the same `cases` in the same order: run_rank_cases' precondition (the
  // rank worker's selection agreement) holds by construction, so a case record that differs
  // is the transport's doing there too.
  // A case outside the matrix, reduced once before the first mutated span, so a dropped or
  // stale piece of the first case brings another case's bytes.
  const PlannedCase warm_up_case = committed_cases({world}, {Distribution::kNormal}, 2).front();
  bool warmed = false;
  for (std::size_t first = 0; first < cases.size();) {
    std::vector<std::vector<RankReport>> reports(world, std::vector<RankReport>(cases.size()));
    std::vector<std::vector<FaultHit>> hits(world, std::vector<FaultHit>(cases.size()));
    // The case each rank was in when it stopped (cases.size(): it finished them all).
    std::vector<std::size_t> at(world, first);
    const bool warm_up = !warmed;
    const std::vector<RankOutcome> ranks =
        run_ranks_over(transport, world, [&](std::uint32_t rank, Transport& inner) {
          FaultyTransport faulty(inner, plan, memory[rank]);
          RankReducers reducers(faulty, host_fixed_order_device(), &host_exact_device(),
                                reducer_options);
          if (warm_up) {
            faulty.begin_span(false);
            run_rank_cases(options, rank, world, reducers, {warm_up_case});
          }
          for (std::size_t i = first; i < cases.size(); ++i) {
            at[rank] = i;
            faulty.begin_span(mutate);
            try {
              reports[rank][i] = run_rank_cases(options, rank, world, reducers, {cases[i]});
            } catch (...) {
              hits[rank][i] = faulty.hit();
              throw;
            }
            hits[rank][i] = faulty.hit();
          }
          at[rank] = cases.size();
        });
    warmed = true;

    std::size_t stopped = cases.size();
    for (std::uint32_t r = 0; r < world; ++r) {
      if (ranks[r].error) stopped = std::min(stopped, at[r]);
    }
    for (std::size_t i = first; i < std::min(stopped + 1, cases.size()); ++i) {
      GateOutcome& out = outcomes[i];
      for (std::uint32_t r = 0; r < world; ++r) {
        const FaultHit& hit = hits[r][i];
        out.reached = out.reached || hit.reached;
        out.changed = out.changed || hit.changed;
        if (hit.fired) {
          out.fired = true;
          out.what = hit.what;
        }
      }
      if (i == stopped) continue;
      std::vector<RankReport> of_case;
      for (std::uint32_t r = 0; r < world; ++r) of_case.push_back(reports[r][i]);
      const CaseResult result = decide_cases(options, {cases[i]}, of_case).front();
      out.verdict = result.verdict;
      out.detail = result.detail;
      out.exit_code = result.verdict == Verdict::kFailed ? kExitVerificationFailed : kExitVerified;
    }
    if (stopped == cases.size()) break;
    // The world stopped in case `stopped`: it is named by the victim's error where the
    // victim failed in it, else by the lowest rank that did.
    std::uint32_t named = world;
    for (std::uint32_t r = 0; r < world; ++r) {
      if (ranks[r].error && at[r] == stopped && (named == world || r == plan.victim)) named = r;
    }
    GateOutcome& out = outcomes[stopped];
    out.error = true;
    out.exit_code = exit_code_of(ranks[named].error);
    out.detail = "rank " + std::to_string(named) + ": " + error_text(ranks[named].error);
    first = stopped + 1;
  }
  return outcomes;
}

}  // namespace rv::test
