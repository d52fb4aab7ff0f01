#include "core/reducer/reduce_scatter_agreement.h"

#include <string>

#include "core/error.h"
#include "core/reducer/agreement.h"

namespace rv {

std::vector<Shard> agree_on_reduce_scatter(Transport& transport, Contract contract, Op op,
                                           DType dtype, std::size_t n,
                                           std::optional<std::size_t> shard_size,
                                           std::size_t out_count) {
  const std::uint32_t world = transport.world_size();
  const std::uint32_t me = transport.rank();
  // A rank whose request is bad does not throw alone (its peers would wait for it until
  // their deadline): the reason goes into its record, which then differs from a good rank's,
  // or, where every rank has it, is thrown by every rank after the round.
  std::string what =
      std::string(to_string(contract)) + " reduce_scatter, op=" + std::string(to_string(op)) +
      ", dtype=" + std::string(to_string(dtype)) + ", n=" + std::to_string(n) + ", shard size=";
  std::string problem;
  std::vector<Shard> plan;
  try {
    plan = padded_shard_plan(n, world, shard_size);
    // The size itself, so a rank naming FSDP's size agrees with one that names none.
    what += std::to_string(shard_size.value_or(padded_shard_size(n, world)));
  } catch (const InputError& e) {
    what += std::to_string(*shard_size);  // only a named size can be refused
    problem = e.what();
  }
  if (problem.empty() && out_count != plan[me].count) {
    problem = "reduce-scatter: rank " + std::to_string(me) + "'s output buffer holds " +
              std::to_string(out_count) + " elements but its shard has " +
              std::to_string(plan[me].count);
  }
  if (!problem.empty()) what += " (refused: " + problem + ")";
  agree_across_ranks(transport, what);
  if (!problem.empty()) throw InputError(problem);
  return plan;
}

}  // namespace rv
