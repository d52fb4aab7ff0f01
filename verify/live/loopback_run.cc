#include "verify/live/loopback_run.h"

#include <iostream>

#include "core/error.h"
#include "verify/live/run_report.h"

#if defined(RV_HAVE_CUDA)
#include "core/oracle/case_reduction.h"
#include "core/cuda/device_info.h"
#include "core/cuda/loopback_exact.h"
#include "core/cuda/loopback_world.h"
#include "core/oracle/emulated_world.h"
#include "core/oracle/reference.h"
#include "verify/golden/raw_inputs.h"
#endif

namespace rv {

#if defined(RV_HAVE_CUDA)
namespace {

constexpr int kDevice = 0;

// Iteration k delivers in shuffled order k + 1 (order 0 is ascending): every repetition
// moves the bytes differently, and all must give the same bits.
std::vector<RankRecord> reduce_on_gpu(const std::vector<std::vector<float>>& arenas,
                                      const std::string& label, std::uint64_t seed, Op op,
                                      std::uint32_t iters) {
  const auto world = static_cast<std::uint32_t>(arenas.size());
  std::vector<RankRecord> records(world);
  for (std::uint32_t k = 0; k < iters; ++k) {
    const auto reduced =
        loopback_all_reduce(arenas, op, shuffled_delivery_orders(world, seed, k + 1), kDevice);
    for (std::uint32_t r = 0; r < world; ++r) {
      records[r].case_id = label;
      records[r].contract = Contract::kFixedOrder;
      records[r].iteration_digests.push_back(digest_floats(reduced[r].data(), reduced[r].size()));
    }
  }
  return records;
}

// The exact contract: the GPU's kernels and word combines for every logical rank; the
// iterations permute the ranks (k > 0), since the true sum does not know which arena is
// which rank.
std::vector<RankRecord> reduce_exact_on_gpu(const std::vector<std::vector<float>>& arenas,
                                            const std::string& label, std::uint64_t seed, Op op,
                                            std::uint32_t iters) {
  const auto world = static_cast<std::uint32_t>(arenas.size());
  std::vector<RankRecord> records(world);
  for (std::uint32_t k = 0; k < iters; ++k) {
    std::vector<std::vector<float>> permuted;
    if (k == 0) {
      permuted = arenas;
    } else {
      for (std::uint32_t r : shuffled_delivery_orders(world, ~seed, k)[0]) permuted.push_back(arenas[r]);
    }
    const auto reduced = loopback_exact_all_reduce(permuted, op, kDevice);
    for (std::uint32_t r = 0; r < world; ++r) {
      records[r].case_id = label;
      records[r].contract = Contract::kExact;
      records[r].iteration_digests.push_back(digest_floats(reduced[r].data(), reduced[r].size()));
    }
  }
  return records;
}

std::vector<const RankRecord*> pointers(const std::vector<RankRecord>& records) {
  std::vector<const RankRecord*> out;
  for (const RankRecord& r : records) out.push_back(&r);
  return out;
}

WorldResults loopback_world_results(std::uint32_t world) {
  WorldResults results;
  results.world = world;
  results.transport = "cuda-loopback";
  results.transport_library = "CUDA runtime " + cuda_version_text(cuda_info().runtime_version) +
                              " (device-to-device copies)";
  const CudaInfo info = cuda_info();
  results.device = info.gpus.empty() ? "cuda:0" : "cuda:0 " + describe(info.gpus[0]);
  return results;
}

int run_loopback_inputs(const RunOptions& options) {
  const Op op = parse_op(options.op).value_or(Op::kSum);
  std::vector<std::vector<float>> arenas = read_raw_inputs(options.inputs);
  const auto world = static_cast<std::uint32_t>(arenas.size());
  const Contract contract = options.inputs_contract();
  const bool exact = contract == Contract::kExact;
  const auto records = exact ? reduce_exact_on_gpu(arenas, "inputs", 0, op, options.iters)
                             : reduce_on_gpu(arenas, "inputs", 0, op, options.iters);
  const std::vector<float> expected_arena = expected_reduction(arenas, contract, op);
  const Digest emulated = digest_floats(expected_arena.data(), expected_arena.size());
  WorldResults results = loopback_world_results(world);
  const std::size_t n = arenas[0].size();
  results.results.push_back(decide_verdict(inputs_case(options.inputs, op, n, contract), contract,
                                           emulated, pointers(records)));
  results.inputs_line = emulated.hex() + "  " + inputs_label(options.inputs, op, n, contract);
  return finish_run(options, {results}, {});
}

}  // namespace
#endif

int run_cuda_loopback(const RunOptions& options) {
#if defined(RV_HAVE_CUDA)
  if (!cuda_device_present()) {
    throw RuntimeFailure("cuda-loopback needs a GPU: " + cuda_info().status);
  }
  if (!options.inputs.empty()) return run_loopback_inputs(options);
  std::vector<WorldResults> worlds;
  std::vector<CaseResult> skipped;
  for (const auto& [w, cases] : group_by_world(plan_cases(options))) {
    if (options.max_world && w > *options.max_world) {
      for (const PlannedCase& c : cases) {
        for (Contract contract : options.contracts()) {
          skipped.push_back(skipped_result(c.id, contract, "W is above --max-world"));
        }
      }
      continue;
    }
    WorldResults results = loopback_world_results(w);
    for (const PlannedCase& c : cases) {
      for (Contract contract : options.contracts()) {
        if (contract == Contract::kLibrarySum) {
          skipped.push_back(
              skipped_result(c.id, contract, "cuda-loopback has no library sum (one process)"));
          continue;
        }
        const auto arenas = generate_case_arenas(c.id);
        const auto records =
            contract == Contract::kExact
                ? reduce_exact_on_gpu(arenas, format_case_id(c.id), c.id.seed, c.id.op, options.iters)
                : reduce_on_gpu(arenas, format_case_id(c.id), c.id.seed, c.id.op, options.iters);
        results.results.push_back(
            decide_verdict(c.id, contract, c.expected_for(contract), pointers(records)));
      }
    }
    worlds.push_back(std::move(results));
  }
  return finish_run(options, worlds, skipped);
#else
  (void)options;
  throw InputError("transport cuda-loopback is not in this build (it needs CUDA)");
#endif
}

}  // namespace rv
