#include "verify/live/rank_worker.h"

#include <algorithm>
#include <iostream>

#include "core/error.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/reference.h"
#include "core/reducer/agreement.h"
#include "core/rendezvous/file_barrier.h"
#include "core/rendezvous/job_directory.h"
#include "verify/common/exit_codes.h"
#include "verify/common/file_io.h"
#include "verify/common/raw_inputs.h"
#include "verify/live/inputs_accumulation.h"
#include "verify/live/rank_cases.h"
#include "verify/live/rendezvous.h"
#include "verify/live/run_report.h"
#include "verify/live/transport_factory.h"

namespace rv {
namespace {

struct RankSession {
  const RunOptions& options;
  LaunchRank launch;
  JobDirectory job;
  RankTransport link;
  std::unique_ptr<RankReducers> reducers;
};

std::string describe_selection(const RunOptions& options, TransportKind transport,
                               const std::vector<PlannedCase>& cases) {
  DigestStream ids;
  for (const PlannedCase& c : cases) {
    const std::string text = format_case_id(c.id) + "\n";
    ids.update(text.data(), text.size());
  }
  return std::string("run: transport=") + to_string(transport) +
         " contract=" + to_string(options.contract) + " iters=" + std::to_string(options.iters) +
         " cases=" + std::to_string(cases.size()) + " selection=" + ids.finish().hex();
}

std::string rank_file(std::uint32_t rank) {
  return "results-rank-" + std::to_string(rank) + ".json";
}

void write_json(const std::string& path, const nlohmann::json& json) {
  const std::string text = json.dump(1);
  write_file_atomically(path, text.data(), text.size());
}

nlohmann::json read_json(const std::string& path) {
  const std::string text = read_file_bytes(path, std::uint64_t{1} << 30);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(path + ": " + error.what());
  }
}

std::vector<RankReport> gather_rank_reports(const RankSession& s) {
  std::vector<RankReport> reports;
  for (std::uint32_t r = 0; r < s.launch.world; ++r) {
    reports.push_back(rank_report_from_json(read_json(s.job.file(rank_file(r)))));
  }
  return reports;
}

WorldResults decide_world(const RankSession& s, const std::vector<PlannedCase>& cases,
                          const std::vector<RankReport>& reports) {
  WorldResults world;
  world.world = s.launch.world;
  world.transport = s.link.transport->name();
  world.transport_library = s.link.transport->library_version();
  world.device = s.link.device->name();
  world.results = decide_cases(s.options, cases, reports);
  return world;
}

// What rank 0 of an --inputs world knows beyond the ranks' digests.
struct InputsExpectation {
  CaseId id;         // inputs_case: W, N, op
  Digest emulated;   // the oracle's digest over all the files (expected_reduction)
  std::string line;  // the line `digest --inputs` prints
};

// --inputs: rank r reduces file r; rank 0 also states the oracle's expectation over all files.
RankReport run_inputs(RankSession& s, Op op, InputsExpectation& expected) {
  const std::vector<std::string>& files = s.options.inputs;
  const std::uint64_t own_size = regular_file_size(files[s.launch.rank]);
  agree_across_ranks(*s.link.transport, "inputs: " + std::to_string(files.size()) + " files, " +
                                            std::to_string(own_size) + " bytes each");
  const DType dtype = s.options.inputs_dtype();
  const std::vector<float> arena = read_raw_inputs({files[s.launch.rank]}, dtype)[0];
  RankReport report;
  report.rank = s.launch.rank;
  report.world = s.launch.world;
  const Contract contract = s.options.inputs_contract();
  RankRecord record;
  record.case_id = "inputs";
  record.contract = contract;
  // More files than ranks: each rank holds several, accumulated exactly (exact only).
  const bool accumulated = files.size() > s.launch.world;
  if (accumulated && dtype != DType::kF32) {
    throw InputError("--inputs: spreading " + std::to_string(files.size()) + " files over " +
                     std::to_string(s.launch.world) + " ranks accumulates binary32 only, not " +
                     std::string(to_string(dtype)));
  }
  if (accumulated && s.options.inputs_coll() == Collective::kReduceScatter) {
    throw InputError("--inputs: spreading " + std::to_string(files.size()) + " files over " +
                     std::to_string(s.launch.world) +
                     " ranks accumulates through the all-reduce; --coll reduce-scatter needs "
                     "one file per rank");
  }
  for (std::uint32_t k = 0; k < s.options.iters; ++k) {
    const std::vector<float> reduced =
        accumulated
            ? reduce_inputs_accumulated(*s.link.transport, files, s.launch.rank, s.launch.world, op)
            : s.reducers->reduce_once(arena, contract, op, dtype, s.options.inputs_coll());
    record.iteration_digests.push_back(digest_values(reduced.data(), reduced.size(), dtype));
  }
  report.records.push_back(record);
  if (s.launch.rank == 0) {
    const std::vector<float> expected_arena =
        expected_reduction(read_raw_inputs(files, dtype), contract, op, dtype);
    expected.id = inputs_case(files, op, arena.size(), contract, dtype);
    expected.emulated = digest_values(expected_arena.data(), expected_arena.size(), dtype);
    expected.line = inputs_line(expected.emulated, files, op, arena.size(), contract, dtype);
  }
  return report;
}

}  // namespace

int run_as_rank(const RunOptions& options, const LaunchRank& launch) {
  const EnvLookup env = process_env();
  const RendezvousPlace place = rank_rendezvous(options, launch, env);
  if (!options.worlds.empty() && std::find(options.worlds.begin(), options.worlds.end(),
                                           launch.world) == options.worlds.end()) {
    throw InputError("the launcher started a world of " + std::to_string(launch.world) +
                     " ranks (" + launch.launcher + "), but --world asks for other sizes");
  }
  const bool inputs_mode = !options.inputs.empty();
  std::vector<PlannedCase> cases;
  if (inputs_mode) {
    // As many files as ranks; or, under exact, more: M addends over W ranks.
    if (options.inputs.size() < launch.world ||
        (options.inputs.size() > launch.world && options.inputs_contract() != Contract::kExact)) {
      throw InputError("--inputs names " + std::to_string(options.inputs.size()) +
                       " files, but the world has " + std::to_string(launch.world) +
                       " ranks (more files than ranks: --contract exact only)");
    }
  } else {
    RunOptions mine = options;
    mine.worlds = {launch.world};
    cases = plan_cases(mine);
  }
  const TransportKind transport = resolve_transport(options.transport, /*under_launcher=*/true);
  RankSession s{
      options,
      launch,
      JobDirectory::open(place.root, place.job_id, launch.rank, launch.world, options.timeout()),
      {},
      nullptr};
  s.link = connect_rank_transport(transport, s.job, launch, options.timeout(), options.hostname);
  s.reducers =
      std::make_unique<RankReducers>(*s.link.transport, *s.link.device, s.link.exact_device);
  agree_across_ranks(*s.link.transport,
                     inputs_mode ? std::string("run --inputs: transport=") + to_string(transport) +
                                       " op=" + options.op + " contract=" +
                                       std::string(to_string(options.inputs_contract()))
                                 : describe_selection(options, transport, cases));

  InputsExpectation expected;
  const Op inputs_op = parse_op(options.op).value_or(Op::kSum);
  const RankReport mine =
      inputs_mode ? run_inputs(s, inputs_op, expected)
                  : run_rank_cases(options, launch.rank, launch.world, *s.reducers, cases);
  write_json(s.job.file(rank_file(launch.rank)), to_json(mine));
  FileBarrier(s.job.file("results-barrier"), launch.rank, launch.world, options.timeout()).wait();
  if (launch.rank != 0) return kExitVerified;

  const std::vector<RankReport> reports = gather_rank_reports(s);
  WorldResults world;
  if (inputs_mode) {
    world = decide_world(s, {}, reports);  // the transport facts; no seeded cases
    std::vector<const RankRecord*> records;
    for (const RankReport& report : reports) {
      records.push_back(report.records.empty() ? nullptr : &report.records[0]);
    }
    // The data's W is the file count; the live world may be smaller (files accumulated).
    CaseId live = expected.id;
    live.world = launch.world;
    CaseResult verdict = decide_verdict(live, expected.id.contract, expected.emulated, records);
    verdict.id.world = expected.id.world;
    world.results.push_back(verdict);
    world.inputs_line = expected.line;
  } else {
    world = decide_world(s, cases, reports);
  }
  write_json(s.job.file(kWorldResultsFile), to_json(world));
  s.job.close();
  if (spawned_by_supervisor(launch, env)) {
    return kExitVerified;  // the supervisor prints and reports
  }
  return finish_run(options, {world}, {});
}

}  // namespace rv
