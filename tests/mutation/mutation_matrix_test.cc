// Detection power of the live gate (issue 10, part 3), as tests/core/detection_test.cc is
// for the reducers: `run`'s per-rank pipeline and verdicts (verify/live/rank_cases.h) over
// thread-per-rank worlds whose transports corrupt what they move (fault_transport.h), one
// fault per case and contract, for every mutant at every call that carries data, over the
// committed golden cases W = 2..5, n = 4099, every distribution.
//
// The matrix it prints (build/tests/mutation/mutation-matrix.md) is docs/ci-gate.md's
// "Mutation matrix"; MatrixIsInTheDocs fails until that page holds the current one.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/arena.h"
#include "tests/mutation/mutation_gate.h"

namespace rv::test {
namespace {

// The contracts whose spans make the site's call.
std::vector<Contract> contracts_at(Site site) {
  switch (site) {
    case Site::kAgreement:
      return {Contract::kFixedOrder, Contract::kExact, Contract::kLibrarySum};
    case Site::kScatter:
    case Site::kDistribute:
      return {Contract::kFixedOrder, Contract::kExact};
    case Site::kWindowMax:
    case Site::kDigitSum:
      return {Contract::kExact};
    case Site::kLibrarySum:
      return {Contract::kLibrarySum};
  }
  return {};
}

struct Entry {
  Mutant mutant;
  Site site;
  GateOutcome outcome;
};

std::vector<Entry> run_matrix(WorldTransport transport, const std::vector<std::uint32_t>& worlds) {
  std::map<std::uint32_t, std::vector<PlannedCase>> by_world;
  for (const PlannedCase& c : matrix_cases()) by_world[c.id.world].push_back(c);
  std::vector<Entry> entries;
  for (Site site : kAllSites) {
    for (Contract contract : contracts_at(site)) {
      for (Mutant mutant : kAllMutants) {
        for (std::uint32_t w : worlds) {
          for (GateOutcome& o :
               run_gate_with_fault(transport, mutant, site, contract, by_world[w])) {
            entries.push_back({mutant, site, std::move(o)});
          }
        }
      }
    }
  }
  return entries;
}

// The whole matrix over the in-process world (a second over Gloo would cost ~40 s of
// connections on a 2-core box; GlooGivesTheSameOutcomes checks W = 3 over Gloo instead).
const std::vector<Entry>& matrix() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> all = run_matrix(WorldTransport::kInProcess, {2, 3, 4, 5});
    std::ofstream log(RV_MATRIX_PATH ".log");
    for (const Entry& e : all) {
      const GateOutcome& o = e.outcome;
      log << to_string(e.site) << " | " << to_string(o.contract) << " | " << to_string(e.mutant)
          << " | w=" << o.id.world << " " << to_string(o.id.dist) << " | changed=" << o.changed
          << " exit=" << o.exit_code << " "
          << (o.error ? "error" : std::string(to_string(o.verdict))) << " | " << o.what << " | "
          << o.detail << "\n";
    }
    return all;
  }();
  return entries;
}

std::string label(const Entry& e) {
  return to_string(e.site) + " / " + to_string(e.mutant) + " / " +
         std::string(to_string(e.outcome.contract)) + " / " + format_case_id(e.outcome.id);
}

// Faults that cannot change a byte at their call, with why (checked: they never do).
std::string no_op_reason(Mutant mutant, Site site) {
  if (site == Site::kWindowMax && mutant == Mutant::kDrop) {
    return "zeros never raise a max, and in these cases every window word of the victim's "
           "first chunk is also some other rank's";
  }
  if (site != Site::kAgreement) return "";
  switch (mutant) {
    case Mutant::kDuplicate:
    case Mutant::kSwap:
    case Mutant::kReorder:
      return "every rank's agreement record is the same bytes";
    case Mutant::kTruncate:
      return "the record's second half is zero padding past the text";
    default:
      return "";
  }
}

TEST(MutationMatrix, WithoutFaultsEveryCasePasses) {
  std::map<std::uint32_t, std::vector<PlannedCase>> by_world;
  for (const PlannedCase& c : matrix_cases()) by_world[c.id.world].push_back(c);
  ASSERT_EQ(by_world.size(), 4u);
  for (const auto& [w, cases] : by_world) {
    ASSERT_EQ(cases.size(), 5u);
    for (Contract contract : {Contract::kFixedOrder, Contract::kExact, Contract::kLibrarySum}) {
      for (const GateOutcome& o : run_gate_with_fault(WorldTransport::kInProcess, Mutant::kDrop,
                                                      Site::kScatter, contract, cases,
                                                      /*mutate=*/false)) {
        EXPECT_FALSE(o.error) << format_case_id(o.id) << ": " << o.detail;
        EXPECT_FALSE(o.changed);
        const bool differs_allowed = !must_equal_golden(o.id, contract);
        EXPECT_TRUE(o.verdict == Verdict::kOk ||
                    (differs_allowed && o.verdict == Verdict::kDiffers))
            << to_string(contract) << " " << format_case_id(o.id) << ": " << o.detail;
      }
    }
  }
}

TEST(MutationMatrix, EveryMutantFiresAndChangesBytesWhereItCan) {
  std::map<std::pair<Mutant, Site>, int> changed;
  for (const Entry& e : matrix()) {
    EXPECT_TRUE(e.outcome.reached) << label(e) << ": the site's call never happened";
    changed[{e.mutant, e.site}] += e.outcome.changed;
  }
  for (Site site : kAllSites) {
    for (Mutant mutant : kAllMutants) {
      const std::string reason = no_op_reason(mutant, site);
      const int changed_cases = changed[std::make_pair(mutant, site)];
      if (reason.empty()) {
        EXPECT_GT(changed_cases, 0) << to_string(mutant) << " at " << to_string(site);
      } else {
        EXPECT_EQ(changed_cases, 0) << to_string(mutant) << " at " << to_string(site)
                                    << " was expected to change nothing: " << reason;
      }
    }
  }
}

// No mutant passes silently: wherever a fault changed the bytes its call returned, the gate
// failed with exit 1 or 3 (a fault on the wire is no bad input: never 2), or the verdict is
// OK: every rank's result, every iteration, is still the golden bit for bit, so the fault
// changed nothing a user gets. A corrupted library sum is never taken for a reassociation
// (DIFFERS, exit 0).
TEST(MutationMatrix, NoMutantPassesSilently) {
  for (const Entry& e : matrix()) {
    const GateOutcome& o = e.outcome;
    EXPECT_NE(o.exit_code, 2) << label(e) << ": " << o.detail;
    if (!o.changed) continue;
    EXPECT_TRUE(o.caught() || (!o.error && o.verdict == Verdict::kOk))
        << label(e) << ": " << o.what << ": passed as " << to_string(o.verdict) << ": " << o.detail;
  }
}

// Every (mutant, call, contract) that changed bytes is caught in some case, except where it
// only ever moved the exact contract's window words without changing what a rank encodes
// (a raised max costs limbs, not bits: stale words of another case; the one top that a
// truncated chunk lowered stayed within the same limb), or only permuted an exact owner's
// addends (an exact sum has no order); the result is the golden (the window max's own drop
// changes nothing at all, see no_op_reason).
TEST(MutationMatrix, EveryFaultThatMattersIsCaughtSomewhere) {
  std::map<std::tuple<Mutant, Site, Contract>, std::pair<int, int>> counts;  // changed, caught
  for (const Entry& e : matrix()) {
    auto& [changed, caught] = counts[{e.mutant, e.site, e.outcome.contract}];
    changed += e.outcome.changed;
    caught += e.outcome.changed && e.outcome.caught();
  }
  const std::set<std::tuple<Mutant, Site, Contract>> harmless_throughout = {
      {Mutant::kStale, Site::kWindowMax, Contract::kExact},
      {Mutant::kTruncate, Site::kWindowMax, Contract::kExact},
      // The owner's slots permuted: an exact sum does not depend on the order of its addends.
      {Mutant::kSwap, Site::kScatter, Contract::kExact},
      {Mutant::kReorder, Site::kScatter, Contract::kExact}};
  for (const auto& [key, count] : counts) {
    const auto& [mutant, site, contract] = key;
    if (count.first == 0) continue;
    const std::string row =
        to_string(mutant) + " at " + to_string(site) + " under " + std::string(to_string(contract));
    if (harmless_throughout.count(key) != 0) {
      EXPECT_EQ(count.second, 0) << row << " is caught now: take it off this list";
    } else {
      EXPECT_GT(count.second, 0) << row << " changed bytes in " << count.first
                                 << " cases and was never caught";
    }
  }
}

// `exact` data catches every corruption (drop, duplicate, stale, flip, truncate) wherever it
// changed the bytes a result is made of. Not the permutations: exact sums are blind to the
// order of addends, as in detection_test. Not the window max: a window wider than needed
// still sums exactly (a larger max costs limbs, not bits), and a narrower one is caught as
// an impossible window or by the golden.
TEST(MutationMatrix, ExactCasesCatchEveryCorruption) {
  int checked = 0;
  for (const Entry& e : matrix()) {
    const GateOutcome& o = e.outcome;
    if (o.id.dist != Distribution::kExact || !is_corruption(e.mutant) || !o.changed ||
        e.site == Site::kWindowMax) {
      continue;
    }
    ++checked;
    EXPECT_TRUE(o.caught()) << label(e) << ": " << o.what;
  }
  EXPECT_GT(checked, 100);
}

// What the gate says names the rank and, for a wrong result, the first wrong element; a
// verdict line names its case, and so does a rank's error.
TEST(MutationMatrix, FailuresNameTheCaseRankAndElement) {
  for (const Entry& e : matrix()) {
    const GateOutcome& o = e.outcome;
    if (!o.caught()) continue;
    EXPECT_NE(o.detail.find("rank "), std::string::npos) << label(e) << ": " << o.detail;
    if (o.error) {
      const std::string id = format_case_id(o.id);
      const std::string data_case = id.substr(id.find(",op="));
      EXPECT_NE(o.detail.find(data_case), std::string::npos) << label(e) << ": " << o.detail;
    } else {
      EXPECT_NE(o.detail.find(": element "), std::string::npos) << label(e) << ": " << o.detail;
    }
  }
}

// The agreement's call is the same in every contract's span, and so is what a fault there
// does.
TEST(MutationMatrix, TheAgreementFailsAlikeUnderEveryContract) {
  std::map<std::tuple<Mutant, std::string>, std::set<int>> codes;
  for (const Entry& e : matrix()) {
    if (e.site != Site::kAgreement) continue;
    codes[{e.mutant, format_case_id(e.outcome.id)}].insert(e.outcome.exit_code);
  }
  for (const auto& [key, set] : codes) {
    EXPECT_EQ(set.size(), 1u) << to_string(std::get<0>(key)) << " " << std::get<1>(key);
  }
}

// How a row's failures showed, from the verdicts' and errors' own words.
std::string caught_as(const GateOutcome& o) {
  const auto has = [&o](const char* text) { return o.detail.find(text) != std::string::npos; };
  switch (o.exit_code) {
    case 1:
      if (has("ranks disagree")) return "FAILED: ranks disagree";
      if (has("more than any association")) return "FAILED: beyond any association";
      return "FAILED: golden";
    case 2:
      return has("ranks disagree") ? "exit 2: ranks disagree" : "exit 2";
    case 3:
      if (has("arrived corrupted")) return "exit 3: corrupt record";
      if (has("ranks disagree")) return "exit 3: records disagree";
      if (has("impossible")) return "exit 3: impossible window";
      return "exit 3";
    default:
      return "";
  }
}

std::string site_label(Site site, std::optional<Contract> contract) {
  const std::string of = contract ? std::string(to_string(*contract)) : "";
  switch (site) {
    case Site::kAgreement:
      return "`all_gather`: case agreement (all three)";
    case Site::kScatter:
      return "`exchange` #1: addends to owners (" + of + ")";
    case Site::kDistribute:
      return "`exchange` #2: reduced shards out (" + of + ")";
    case Site::kWindowMax:
      return "`all_reduce_int64` max: windows (exact, digits dataflow)";
    case Site::kDigitSum:
      return "`all_reduce_int64` sum: digits (exact, digits dataflow)";
    case Site::kLibrarySum:
      return "`library_sum` (library-sum)";
  }
  return "";
}

// One row per site and mutant (mutants with the same row merged): per distribution, the
// cases the gate failed / the cases where the fault changed bytes ("—": it changed none).
std::string render(const std::vector<Entry>& entries) {
  const std::vector<Distribution> dists(std::begin(kAllDistributions), std::end(kAllDistributions));
  std::ostringstream out;
  out << "| call hit (contract) | mutant |";
  for (Distribution d : dists) out << " " << to_string(d) << " |";
  out << " caught as |\n|---|---|";
  for (std::size_t i = 0; i < dists.size(); ++i) out << "---|";
  out << "---|\n";
  // Rows per site, and per contract where the site's call differs by contract (the
  // agreement's is the same record under all three).
  std::vector<std::pair<Site, std::optional<Contract>>> groups;
  for (Site site : kAllSites) {
    if (site == Site::kAgreement) {
      groups.emplace_back(site, std::nullopt);
    } else {
      for (Contract contract : contracts_at(site)) groups.emplace_back(site, contract);
    }
  }
  for (const auto& [site, contract] : groups) {
    std::vector<std::pair<std::string, std::string>> rows;  // mutants, rest of the row
    for (Mutant mutant : kAllMutants) {
      std::map<Distribution, std::pair<int, int>> cells;  // caught, changed
      std::set<std::string> how;
      for (const Entry& e : entries) {
        if (e.site != site || e.mutant != mutant) continue;
        if (contract && e.outcome.contract != *contract) continue;
        auto& [caught, changed] = cells[e.outcome.id.dist];
        changed += e.outcome.changed;
        caught += e.outcome.changed && e.outcome.caught();
        if (e.outcome.caught()) how.insert(caught_as(e.outcome));
      }
      std::string rest;
      for (Distribution d : dists) {
        const auto& [caught, changed] = cells[d];
        rest += changed == 0 ? " — |"
                             : " " + std::to_string(caught) + "/" + std::to_string(changed) + " |";
      }
      std::string joined;
      for (const std::string& h : how) joined += (joined.empty() ? "" : "; ") + h;
      rest += " " + (joined.empty() ? "—" : joined) + " |";
      if (!rows.empty() && rows.back().second == rest) {
        rows.back().first += ", " + to_string(mutant);
      } else {
        rows.emplace_back(to_string(mutant), rest);
      }
    }
    for (const auto& [mutants, rest] : rows) {
      out << "| " << site_label(site, contract) << " | " << mutants << " |" << rest << "\n";
    }
  }
  return out.str();
}

TEST(MutationMatrix, MatrixIsInTheDocs) {
  const std::string table = render(matrix());
  std::ofstream(RV_MATRIX_PATH) << table;
  std::cout << table;
  std::ifstream page(RV_SOURCE_DIR "/docs/ci-gate.md");
  ASSERT_TRUE(page) << RV_SOURCE_DIR "/docs/ci-gate.md cannot be read";
  std::stringstream text;
  text << page.rdbuf();
  EXPECT_NE(text.str().find(table), std::string::npos)
      << "docs/ci-gate.md's mutation matrix is not the one this build measures: copy "
      << RV_MATRIX_PATH << " over the table under \"Mutation matrix\"";
}

// The same faults over the live CPU transport: Gloo's own collectives and byte movement
// under the wrapper give the same outcome in every case (W = 3).
TEST(MutationMatrix, GlooGivesTheSameOutcomes) {
  if (world_transports().back() != WorldTransport::kGloo) GTEST_SKIP() << "no gloo in this build";
  std::map<std::string, const GateOutcome*> in_process;
  for (const Entry& e : matrix()) in_process[label(e)] = &e.outcome;
  const std::vector<Entry> over_gloo = run_matrix(WorldTransport::kGloo, {3});
  EXPECT_EQ(over_gloo.size(), 5u * 7u * 10u);  // distributions × mutants × (site, contract)
  for (const Entry& e : over_gloo) {
    const GateOutcome* same = in_process.at(label(e));
    EXPECT_EQ(e.outcome.exit_code, same->exit_code) << label(e) << ": " << e.outcome.detail;
    EXPECT_EQ(e.outcome.changed, same->changed) << label(e);
    EXPECT_EQ(e.outcome.verdict, same->verdict) << label(e);
  }
}

}  // namespace
}  // namespace rv::test
