#include "tests/reducer/reducer_cases.h"

#include <algorithm>

#include "core/exact/exact_reduction.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/emulated_world.h"
#include "core/oracle/reference.h"

namespace rv::test {

std::vector<WorldCount> world_count_matrix(const std::vector<std::uint32_t>& large_worlds) {
  std::vector<WorldCount> matrix;
  for (std::uint32_t w : {1u, 2u, 3u, 4u, 5u, 8u}) {
    std::vector<std::size_t> counts = {0, 1, 1000};
    if (w > 2) counts.push_back(w - 1);
    if (std::find(large_worlds.begin(), large_worlds.end(), w) != large_worlds.end()) {
      counts.push_back(1000003);
    }
    for (std::size_t n : counts) matrix.push_back(WorldCount{w, n});
  }
  return matrix;
}

std::string world_count_name(const WorldCount& wc) {
  return "w" + std::to_string(wc.world) + "_n" + std::to_string(wc.count);
}

std::vector<ExpectedCase> expected_cases(Contract contract, const WorldCount& wc) {
  std::vector<ExpectedCase> cases;
  for (Distribution dist : kAllDistributions) {
    CaseId id;
    id.contract = contract;
    id.world = wc.world;
    id.count = wc.count;
    id.dist = dist;
    id.seed = 20261202 + wc.world;
    const auto arenas = generate_case_arenas(id);
    for (Op op : {Op::kSum, Op::kMean}) {
      id.op = op;
      cases.push_back(ExpectedCase{id, contract == Contract::kExact
                                           ? reference_exact(arenas, op)
                                           : reference_fixed_order(arenas, op)});
    }
  }
  return cases;
}

std::vector<float> rank_arena(const CaseId& id, std::uint32_t rank) {
  return generate_arena(id.arena(), rank, static_cast<std::size_t>(id.count));
}

}  // namespace rv::test
