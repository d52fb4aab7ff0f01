#include "verify/live/run_plan.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "verify/golden/embedded_golden.h"
#include "verify/golden/golden_file.h"

namespace rv {

namespace {

CaseId data_of(CaseId id) {
  id.contract = Contract::kFixedOrder;
  return id;
}

// The golden lines of every file, one PlannedCase per data case in order of first
// appearance; `has_fixed` / `has_exact` say which digests a file gave.
struct Collected {
  std::vector<PlannedCase> cases;
  std::vector<bool> has_fixed, has_exact;
  std::map<std::string, std::size_t> index;  // data case id → position
};

void add_file(const GoldenFile& file, Collected& all) {
  if (!file.malformed.empty()) {
    const MalformedLine& bad = file.malformed.front();
    throw InputError(file.path + ":" + std::to_string(bad.line) +
                     ": improperly formatted: " + bad.reason);
  }
  for (const GoldenEntry& entry : file.entries) {
    if (entry.id.contract == Contract::kLibrarySum) {
      throw InputError(file.path + ":" + std::to_string(entry.line) +
                       ": library-sum has no golden digests (it is compared with fixed-order)");
    }
    const CaseId data = data_of(entry.id);
    const std::string key = format_case_id(data);
    auto [it, added] = all.index.emplace(key, all.cases.size());
    const std::string where = file.path + ":" + std::to_string(entry.line);
    if (added) {
      all.cases.push_back({data, Digest{}, Digest{}, where});
      all.has_fixed.push_back(false);
      all.has_exact.push_back(false);
    }
    const std::size_t i = it->second;
    if (entry.id.contract == Contract::kExact) {
      all.cases[i].expected_exact = entry.digest;
      all.has_exact[i] = true;
    } else {
      all.cases[i].expected = entry.digest;
      all.has_fixed[i] = true;
    }
  }
}

CaseId with_contract(CaseId id, Contract contract) {
  id.contract = contract;
  return id;
}

}  // namespace

std::vector<PlannedCase> plan_cases(const RunOptions& options) {
  std::vector<GoldenFile> files;
  if (options.golden_files.empty()) {
    for (const EmbeddedGolden& golden : embedded_golden_files()) {
      files.push_back(parse_golden_text(golden.text, std::string("(embedded) ") + golden.path));
    }
  } else {
    for (const std::string& path : options.golden_files) files.push_back(read_golden_file(path));
  }
  Collected all;
  for (const GoldenFile& file : files) add_file(file, all);
  // A case given two digests is refused, as `check` fails it: which line held the run would
  // otherwise depend on the order of the lines.
  std::vector<const GoldenFile*> read;
  for (const GoldenFile& file : files) read.push_back(&file);
  const std::vector<DigestConflict> conflicts = digest_conflicts(read);
  if (!conflicts.empty()) {
    const DigestConflict& c = conflicts.front();
    throw InputError(c.second + ": " + c.id + " has digest " + c.second_digest.hex() + ", but " +
                     c.first + " gives it " + c.first_digest.hex() +
                     (conflicts.size() > 1
                          ? " (" + std::to_string(conflicts.size()) + " conflicts in all)"
                          : ""));
  }

  std::vector<std::size_t> chosen;  // positions in all.cases; new --case ids are appended
  if (!options.case_ids.empty()) {
    for (const std::string& text : options.case_ids) {
      const CaseId id = data_of(parse_case_id(text));
      const std::string key = format_case_id(id);
      auto it = all.index.find(key);
      if (it == all.index.end()) {
        // A case outside the goldens is still verifiable: its goldens are derived below.
        it = all.index.emplace(key, all.cases.size()).first;
        all.cases.push_back({id, Digest{}, Digest{}, "(derived from the case id)"});
        all.has_fixed.push_back(false);
        all.has_exact.push_back(false);
      }
      chosen.push_back(it->second);
    }
  } else {
    for (std::size_t i = 0; i < all.cases.size(); ++i) chosen.push_back(i);
  }
  if (!options.worlds.empty()) {
    std::vector<std::size_t> of_worlds;
    for (std::size_t i : chosen) {
      if (std::find(options.worlds.begin(), options.worlds.end(), all.cases[i].id.world) !=
          options.worlds.end()) {
        of_worlds.push_back(i);
      }
    }
    chosen.swap(of_worlds);
  }
  if (!options.dtypes.empty()) {
    std::vector<std::size_t> of_dtypes;
    for (std::size_t i : chosen) {
      const std::string dtype(to_string(all.cases[i].id.dtype));
      if (std::find(options.dtypes.begin(), options.dtypes.end(), dtype) != options.dtypes.end()) {
        of_dtypes.push_back(i);
      }
    }
    chosen.swap(of_dtypes);
  }
  if (!options.coll.empty()) {
    std::vector<std::size_t> of_coll;
    for (std::size_t i : chosen) {
      if (to_string(all.cases[i].id.coll) == options.coll) of_coll.push_back(i);
    }
    chosen.swap(of_coll);
  }
  if (chosen.empty()) {
    if (!options.dtypes.empty()) throw InputError("no selected case has one of the --dtype given");
    if (!options.coll.empty()) throw InputError("no selected case is a " + options.coll);
    std::string worlds;
    for (std::uint32_t w : options.worlds)
      worlds += (worlds.empty() ? "" : ",") + std::to_string(w);
    throw InputError(options.worlds.empty() ? std::string("no cases selected")
                                            : "no selected case has W in {" + worlds + "}");
  }
  // Digests a golden file did not give, derived from the case id (the contracts that run
  // need them: library-sum is compared with fixed-order's).
  const std::vector<Contract> contracts = options.contracts();
  const auto runs = [&](Contract c) {
    return std::find(contracts.begin(), contracts.end(), c) != contracts.end();
  };
  const bool need_fixed = runs(Contract::kFixedOrder) || runs(Contract::kLibrarySum);
  std::vector<PlannedCase> selected;
  for (std::size_t i : chosen) {
    PlannedCase c = all.cases[i];
    if (need_fixed && !all.has_fixed[i]) c.expected = digest_case(c.id);
    if (runs(Contract::kExact) && !all.has_exact[i]) {
      c.expected_exact = digest_case(with_contract(c.id, Contract::kExact));
    }
    selected.push_back(std::move(c));
  }
  return selected;
}

std::map<std::uint32_t, std::vector<PlannedCase>> group_by_world(
    const std::vector<PlannedCase>& cases) {
  std::map<std::uint32_t, std::vector<PlannedCase>> worlds;
  for (const PlannedCase& c : cases) worlds[c.id.world].push_back(c);
  return worlds;
}

}  // namespace rv
