#include "verify/live/rank_worker.h"

#include <algorithm>
#include <iostream>

#include "core/case_reduction.h"
#include "core/emulated_world.h"
#include "core/error.h"
#include "core/launch/file_barrier.h"
#include "core/launch/job_directory.h"
#include "core/reducer/agreement.h"
#include "core/reducer/exact_reducer.h"
#include "core/reducer/fixed_order_reducer.h"
#include "core/reducer/library_sum_reducer.h"
#include "verify/common/exit_codes.h"
#include "verify/common/file_io.h"
#include "verify/golden/raw_inputs.h"
#include "verify/live/rendezvous.h"
#include "verify/live/run_report.h"
#include "verify/live/transport_factory.h"

namespace rv {
namespace {

// A device buffer of the rank's fold device, freed on scope exit.
class DeviceArena {
 public:
  DeviceArena(FoldDevice& device, std::size_t n) : device_(device), data_(device.allocate(n)) {}
  ~DeviceArena() { device_.free(data_); }
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;
  float* data() const { return data_; }

 private:
  FoldDevice& device_;
  float* data_;
};

struct RankSession {
  const RunOptions& options;
  LaunchRank launch;
  JobDirectory job;
  RankTransport link;
  std::unique_ptr<FixedOrderReducer> reducer;
  std::unique_ptr<ExactReducer> exact_reducer;  // made at the first exact case
};

// Reduces `arena` once under `contract`, returns the result on the host.
std::vector<float> reduce_once(RankSession& s, const std::vector<float>& arena, float* buffer,
                               Contract contract, Op op) {
  FoldDevice& device = *s.link.device;
  const std::size_t n = arena.size();
  device.upload(buffer, arena.data(), n * sizeof(float));
  if (contract == Contract::kFixedOrder) {
    s.reducer->all_reduce(buffer, n, op);
  } else if (contract == Contract::kExact) {
    if (s.link.exact_device == nullptr) {
      throw InputError("the exact contract is not available on transport " +
                       s.link.transport->name() + " in this build");
    }
    if (!s.exact_reducer) {
      s.exact_reducer = std::make_unique<ExactReducer>(*s.link.transport, *s.link.exact_device);
    }
    s.exact_reducer->all_reduce(buffer, n, op);
  } else {
    library_sum_all_reduce(*s.link.transport, device, buffer, n, op);
  }
  device.synchronize();
  std::vector<float> reduced(n);
  device.download(reduced.data(), buffer, n * sizeof(float));
  return reduced;
}

std::string describe_selection(const RunOptions& options, const std::string& transport,
                               const std::vector<PlannedCase>& cases) {
  DigestStream ids;
  for (const PlannedCase& c : cases) {
    const std::string text = format_case_id(c.id) + "\n";
    ids.update(text.data(), text.size());
  }
  return "run: transport=" + transport + " contract=" + options.contract +
         " iters=" + std::to_string(options.iters) + " cases=" + std::to_string(cases.size()) +
         " selection=" + ids.finish().hex();
}

RankReport run_cases(RankSession& s, const std::vector<PlannedCase>& cases) {
  RankReport report;
  report.rank = s.launch.rank;
  report.world = s.launch.world;
  std::uint64_t largest = 0;
  for (const PlannedCase& c : cases) largest = std::max(largest, c.id.count);
  DeviceArena buffer(*s.link.device, static_cast<std::size_t>(largest));
  for (const PlannedCase& c : cases) {
    // Same case and same arena length on every rank before any bytes move: a size mismatch
    // would abort Gloo's receiver and hang NCCL.
    agree_across_ranks(*s.link.transport, "case " + format_case_id(c.id));
    const std::vector<float> arena =
        generate_arena(c.id.arena(), s.launch.rank, static_cast<std::size_t>(c.id.count));
    for (Contract contract : s.options.contracts()) {
      RankRecord record;
      record.case_id = format_case_id(c.id);
      record.contract = contract;
      for (std::uint32_t k = 0; k < s.options.iters; ++k) {
        const std::vector<float> reduced = reduce_once(s, arena, buffer.data(), contract, c.id.op);
        record.iteration_digests.push_back(digest_floats(reduced.data(), reduced.size()));
        if (k != 0 || s.launch.rank != 0) continue;
        if (contract == Contract::kLibrarySum && record.iteration_digests[0] != c.expected) {
          const ErrorVsExact d = error_against(c.id, reduced, Contract::kFixedOrder);
          record.differing_elements = d.differing_elements;
          record.max_ulp = d.max_ulp;
        }
        if (s.options.accuracy && contract != Contract::kExact) {
          record.vs_exact = error_against(c.id, reduced, Contract::kExact);
        }
      }
      report.records.push_back(std::move(record));
    }
  }
  return report;
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
  std::size_t index = 0;
  for (const PlannedCase& c : cases) {
    for (Contract contract : s.options.contracts()) {
      std::vector<const RankRecord*> records;
      for (const RankReport& report : reports) {
        records.push_back(index < report.records.size() ? &report.records[index] : nullptr);
      }
      world.results.push_back(decide_verdict(c.id, contract, c.expected_for(contract), records));
      ++index;
    }
  }
  return world;
}

// What rank 0 of an --inputs world knows beyond the ranks' digests.
struct InputsExpectation {
  CaseId id;         // inputs_case: W, N, op
  Digest emulated;   // EmulatedWorld's digest over all the files
  std::string line;  // the line `digest --inputs` prints
};

// --inputs: rank r reduces file r; rank 0 also runs EmulatedWorld over all files.
RankReport run_inputs(RankSession& s, Op op, InputsExpectation& expected) {
  const std::vector<std::string>& files = s.options.inputs;
  const std::uint64_t own_size = regular_file_size(files[s.launch.rank]);
  agree_across_ranks(*s.link.transport, "inputs: " + std::to_string(files.size()) + " files, " +
                                            std::to_string(own_size) + " bytes each");
  const std::vector<float> arena = read_f32_file(files[s.launch.rank], kMaxTotalElements);
  DeviceArena buffer(*s.link.device, arena.size());
  RankReport report;
  report.rank = s.launch.rank;
  report.world = s.launch.world;
  const Contract contract = s.options.inputs_contract();
  RankRecord record;
  record.case_id = "inputs";
  record.contract = contract;
  for (std::uint32_t k = 0; k < s.options.iters; ++k) {
    const std::vector<float> reduced = reduce_once(s, arena, buffer.data(), contract, op);
    record.iteration_digests.push_back(digest_floats(reduced.data(), reduced.size()));
  }
  report.records.push_back(record);
  if (s.launch.rank == 0) {
    std::vector<std::vector<float>> arenas = read_raw_inputs(files);
    if (contract == Contract::kExact) {
      EmulatedWorld(s.launch.world).all_reduce_exact(arenas, op);
    } else {
      EmulatedWorld(s.launch.world).all_reduce(arenas, op);
    }
    expected.id = inputs_case(files, op, arena.size(), contract);
    expected.emulated = digest_floats(arenas[0].data(), arenas[0].size());
    expected.line =
        expected.emulated.hex() + "  " + inputs_label(files, op, arena.size(), contract);
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
    if (options.inputs.size() != launch.world) {
      throw InputError("--inputs names " + std::to_string(options.inputs.size()) +
                       " files, but the world has " + std::to_string(launch.world) + " ranks");
    }
  } else {
    RunOptions mine = options;
    mine.worlds = {launch.world};
    cases = plan_cases(mine);
  }
  const std::string transport = resolve_transport(options.transport, /*under_launcher=*/true);
  RankSession s{
      options,
      launch,
      JobDirectory::open(place.root, place.job_id, launch.rank, launch.world, options.timeout()),
      {},
      nullptr,
      nullptr};
  s.link = connect_rank_transport(transport, s.job, launch, options.timeout(), options.hostname);
  s.reducer = std::make_unique<FixedOrderReducer>(*s.link.transport, *s.link.device);
  agree_across_ranks(*s.link.transport,
                     inputs_mode ? "run --inputs: transport=" + transport + " op=" + options.op +
                                       " contract=" + std::string(to_string(options.inputs_contract()))
                                 : describe_selection(options, transport, cases));

  InputsExpectation expected;
  const Op inputs_op = parse_op(options.op).value_or(Op::kSum);
  const RankReport mine = inputs_mode ? run_inputs(s, inputs_op, expected) : run_cases(s, cases);
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
    world.results.push_back(
        decide_verdict(expected.id, expected.id.contract, expected.emulated, records));
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
