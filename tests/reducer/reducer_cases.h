// The case matrix of the reducer tests: worlds W ∈ {1, 2, 3, 4, 5, 8}, counts 0, 1, W − 1
// (fewer elements than ranks: empty shards), 1000, and 1000003 (a remainder) for a few W;
// every distribution, both ops. Expected bits come from the contract's straight reference
// (the fold, or the exact contract's reference_exact).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/case_id.h"

namespace rv::test {

struct WorldCount {
  std::uint32_t world = 1;
  std::size_t count = 0;
};

// Every (W, N) of the matrix; `large_worlds` are the W that also get N = 1000003.
std::vector<WorldCount> world_count_matrix(const std::vector<std::uint32_t>& large_worlds);
std::string world_count_name(const WorldCount& wc);

// One case of the matrix with its reference result.
struct ExpectedCase {
  CaseId id;
  std::vector<float> expected;
};

// Both ops of every distribution at (W, N), contract as given.
std::vector<ExpectedCase> expected_cases(Contract contract, const WorldCount& wc);

// Rank `rank`'s arena of the case.
std::vector<float> rank_arena(const CaseId& id, std::uint32_t rank);

}  // namespace rv::test
