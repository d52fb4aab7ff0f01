#include "verify/live/run_plan.h"

#include "core/error.h"
#include "verify/golden/embedded_golden.h"
#include "verify/golden/golden_file.h"

namespace rv {

std::vector<Contract> RunOptions::contracts() const {
  if (contract == "fixed-order") return {Contract::kFixedOrder};
  if (contract == "library-sum") return {Contract::kLibrarySum};
  if (contract == "both") return {Contract::kFixedOrder, Contract::kLibrarySum};
  throw InputError("--contract '" + contract + "' is not fixed-order, library-sum or both");
}

namespace {

void add_file(const GoldenFile& file, std::vector<PlannedCase>& cases) {
  if (!file.malformed.empty()) {
    const MalformedLine& bad = file.malformed.front();
    throw InputError(file.path + ":" + std::to_string(bad.line) +
                     ": improperly formatted: " + bad.reason);
  }
  for (const GoldenEntry& entry : file.entries) {
    if (entry.id.contract != Contract::kFixedOrder) {
      throw InputError(file.path + ":" + std::to_string(entry.line) +
                       ": only fixed-order golden lines can be verified");
    }
    cases.push_back({entry.id, entry.digest, file.path + ":" + std::to_string(entry.line)});
  }
}

}  // namespace

std::vector<PlannedCase> plan_cases(const RunOptions& options) {
  std::vector<PlannedCase> all;
  if (options.golden_files.empty()) {
    for (const EmbeddedGolden& golden : embedded_golden_files()) {
      add_file(parse_golden_text(golden.text, std::string("(embedded) ") + golden.path), all);
    }
  } else {
    for (const std::string& path : options.golden_files) add_file(read_golden_file(path), all);
  }

  std::vector<PlannedCase> selected;
  if (!options.case_ids.empty()) {
    for (const std::string& text : options.case_ids) {
      CaseId id = parse_case_id(text);
      if (id.contract != Contract::kFixedOrder) {
        throw InputError(
            "--case: give the fixed-order id of the data (contract=fixed-order); "
            "--contract chooses what runs");
      }
      bool found = false;
      for (const PlannedCase& c : all) {
        if (c.id == id) {
          selected.push_back(c);
          found = true;
          break;
        }
      }
      // A case outside the goldens is still verifiable: its golden is re-derived here.
      if (!found) selected.push_back({id, digest_case(id), "(derived from the case id)"});
    }
  } else {
    selected = all;
  }
  if (!options.worlds.empty()) {
    std::vector<PlannedCase> of_worlds;
    for (const PlannedCase& c : selected) {
      for (std::uint32_t w : options.worlds) {
        if (c.id.world == w) {
          of_worlds.push_back(c);
          break;
        }
      }
    }
    selected.swap(of_worlds);
  }
  if (selected.empty()) {
    std::string worlds;
    for (std::uint32_t w : options.worlds)
      worlds += (worlds.empty() ? "" : ",") + std::to_string(w);
    throw InputError(options.worlds.empty() ? std::string("no cases selected")
                                            : "no selected case has W in {" + worlds + "}");
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
