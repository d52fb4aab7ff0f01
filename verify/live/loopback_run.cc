#include "verify/live/loopback_run.h"

#include <iostream>

#include "core/error.h"
#include "verify/live/run_report.h"

#if defined(RV_HAVE_CUDA)
#include "core/arena.h"
#include "core/cuda/device_info.h"
#include "core/oracle/emulated_world.h"
#include "core/oracle/reference.h"
#include "verify/live/loopback_ranks.h"
#include "verify/common/raw_inputs.h"
#endif

namespace rv {

#if defined(RV_HAVE_CUDA)
namespace {

using cuda_loopback::LoopbackRanks;

// Every logical rank reduces with the real reducer of `contract` over the loopback
// transport, whose exchanges deliver in a new shuffled order each time: every repetition
// moves the bytes differently, and all must give the same bits. Under exact, iterations
// k > 0 also permute which arena each rank holds, since the true sum does not know which
// arena is which rank. arenas[r] is rank r's own arena.
std::vector<RankRecord> reduce_on_gpu(LoopbackRanks& ranks,
                                      const std::vector<std::vector<float>>& arenas,
                                      const std::string& label, std::uint64_t seed,
                                      Contract contract, Op op, DType dtype,
                                      std::uint32_t iters, Collective coll) {
  const std::uint32_t world = ranks.world();
  std::vector<RankRecord> records(world);
  for (std::uint32_t k = 0; k < iters; ++k) {
    std::vector<std::uint32_t> source(world);
    for (std::uint32_t r = 0; r < world; ++r) source[r] = r;
    if (contract == Contract::kExact && k > 0) {
      source = shuffled_delivery_order(world, ~seed, k, 0);
    }
    std::vector<std::vector<float>> reduced(world);
    ranks.run([&](std::uint32_t r) {
      reduced[r] = ranks.reduce(r, arenas[source[r]], contract, op, dtype, coll);
    });
    // A reduce-scatter's digest covers every rank's shard, in rank order (the padding
    // dropped): the all-reduce's golden when each shard is its slice.
    std::vector<float> shards;
    if (coll == Collective::kReduceScatter) {
      for (const std::vector<float>& shard : reduced) {
        shards.insert(shards.end(), shard.begin(), shard.end());
      }
    }
    for (std::uint32_t r = 0; r < world; ++r) {
      const std::vector<float>& result = coll == Collective::kReduceScatter ? shards : reduced[r];
      records[r].case_id = label;
      records[r].contract = contract;
      records[r].iteration_digests.push_back(digest_values(result.data(), result.size(), dtype));
    }
  }
  return records;
}

cuda_loopback::LoopbackRanksOptions loopback_options(const RunOptions& options,
                                                     std::uint32_t world) {
  cuda_loopback::LoopbackRanksOptions o;
  o.timeout = options.timeout();
  o.delivery_seed = world;
  return o;
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
  const DType dtype = options.inputs_dtype();
  const std::vector<std::vector<float>> arenas = read_raw_inputs(options.inputs, dtype);
  const auto world = static_cast<std::uint32_t>(arenas.size());
  const Contract contract = options.inputs_contract();
  LoopbackRanks ranks(world, loopback_options(options, world));
  const auto records =
      reduce_on_gpu(ranks, arenas, "inputs", 0, contract, op, dtype, options.iters,
                    options.inputs_coll());
  const std::vector<float> expected_arena = expected_reduction(arenas, contract, op, dtype);
  const Digest expected = digest_values(expected_arena.data(), expected_arena.size(), dtype);
  WorldResults results = loopback_world_results(world);
  const std::size_t n = arenas[0].size();
  results.results.push_back(decide_verdict(inputs_case(options.inputs, op, n, contract, dtype),
                                           contract, expected, pointers(records)));
  results.inputs_line = inputs_line(expected, options.inputs, op, n, contract, dtype);
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
    LoopbackRanks ranks(w, loopback_options(options, w));
    std::vector<std::vector<float>> arenas(w);
    for (const PlannedCase& c : cases) {
      bool generated = false;
      for (Contract contract : options.contracts()) {
        if (contract == Contract::kLibrarySum) {
          skipped.push_back(
              skipped_result(c.id, contract, "cuda-loopback has no library sum (one process)"));
          continue;
        }
        if (!generated) {
          // Every rank generates its own arena, on its own thread.
          validate_case_id(c.id);
          ranks.run([&](std::uint32_t r) {
            arenas[r] = generate_arena(c.id.arena(), r, static_cast<std::size_t>(c.id.count));
          });
          generated = true;
        }
        const auto records = reduce_on_gpu(ranks, arenas, format_case_id(c.id), c.id.seed, contract,
                                           c.id.op, c.id.dtype, options.iters, c.id.coll);
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
