#include "verify/golden/golden_maker.h"

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/exact/exact_reduction.h"
#include "core/fold_law.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/emulated_world.h"
#include "core/oracle/reference.h"
#include "core/shard_plan.h"

namespace rv {
namespace {

using Arenas = std::vector<std::vector<float>>;

std::string bits_hex(float value) {
  std::ostringstream out;
  out << "0x" << std::hex << float_bits(value);
  return out.str();
}

// Throws naming the first rank and element of `arenas` that differs from `reference`.
void expect_reference(const CaseId& id, const Arenas& arenas, const std::vector<float>& reference,
                      const std::string& what) {
  for (std::size_t r = 0; r < arenas.size(); ++r) {
    if (std::memcmp(arenas[r].data(), reference.data(), reference.size() * sizeof(float)) == 0) {
      continue;
    }
    std::size_t i = 0;
    while (float_bits(arenas[r][i]) == float_bits(reference[i])) ++i;
    throw InternalError("case " + format_case_id(id) + ": " + what +
                        " differs from the reference at rank " + std::to_string(r) + " element " +
                        std::to_string(i) + " (" + bits_hex(arenas[r][i]) + " vs " +
                        bits_hex(reference[i]) + ")");
  }
}

// A reduce-scatter's shards (docs/DESIGN.md §2.6, the padding already dropped) against the
// all-reduce's reference: shard p must be its slice [p × s, p × s + count). Throws naming the
// first rank, shard element and arena index that differ.
void expect_shards(const CaseId& id, const Arenas& shards, const std::vector<float>& reference,
                   const std::string& what) {
  const std::vector<Shard> plan = padded_shard_plan(reference.size(), id.world);
  for (std::uint32_t p = 0; p < id.world; ++p) {
    const Shard& slice = plan[p];
    if (shards[p].size() != slice.count) {
      throw InternalError("case " + format_case_id(id) + ": " + what + " gives rank " +
                          std::to_string(p) + " " + std::to_string(shards[p].size()) +
                          " elements, its shard holds " + std::to_string(slice.count));
    }
    for (std::size_t j = 0; j < slice.count; ++j) {
      if (float_bits(shards[p][j]) == float_bits(reference[slice.begin + j])) continue;
      throw InternalError("case " + format_case_id(id) + ": " + what + ": rank " +
                          std::to_string(p) + "'s shard differs from the all-reduce's slice at " +
                          "its element " + std::to_string(j) + " (index " +
                          std::to_string(slice.begin + j) + ": " + bits_hex(shards[p][j]) +
                          " vs " + bits_hex(reference[slice.begin + j]) + ")");
    }
  }
}

// Trial 0 delivers in ascending order; the others shuffle every owner's arrivals.
DeliveryOrders delivery_of(const CaseId& id, std::uint32_t trial) {
  return trial == 0 ? DeliveryOrders{} : shuffled_delivery_orders(id.world, id.seed, trial);
}

// Fixed-order: EmulatedWorld's owner dataflow under every delivery order equals the straight
// ascending fold.
std::vector<float> proven_fixed_order(const CaseId& id, std::uint32_t orders) {
  const Arenas inputs = generate_case_arenas(id);
  std::vector<float> reference = reference_fixed_order(inputs, id.op, id.dtype);
  const EmulatedWorld world(id.world);
  for (std::uint32_t trial = 0; trial < orders; ++trial) {
    const std::string what = "EmulatedWorld under delivery order " + std::to_string(trial);
    if (id.coll == Collective::kReduceScatter) {
      expect_shards(id, world.reduce_scatter(inputs, id.op, delivery_of(id, trial), id.dtype),
                    reference, what);
      continue;
    }
    Arenas arenas = inputs;
    world.all_reduce(arenas, id.op, delivery_of(id, trial), id.dtype);
    expect_reference(id, arenas, reference, what);
  }
  return reference;
}

// Exact: EmulatedWorld's integer dataflow under every delivery order, and with the ranks
// permuted on odd trials (the true sum does not know which arena is which rank), equals the
// straight reference, which shares none of the window and limb code.
std::vector<float> proven_exact(const CaseId& id, std::uint32_t orders) {
  const Arenas inputs = generate_case_arenas(id);
  std::vector<float> reference = reference_exact(inputs, id.op, id.dtype);
  const EmulatedWorld world(id.world);
  for (std::uint32_t trial = 0; trial < orders; ++trial) {
    Arenas arenas;
    const bool permuted = trial % 2 == 1;
    if (permuted) {
      // A seeded permutation of the ranks: owner 0's shuffled order under another seed.
      const auto perm = shuffled_delivery_orders(id.world, ~id.seed, trial)[0];
      for (std::uint32_t r : perm) arenas.push_back(inputs[r]);
    } else {
      arenas = inputs;
    }
    const std::string what = "EmulatedWorld's exact dataflow under delivery order " +
                             std::to_string(trial) + (permuted ? " with the ranks permuted" : "");
    if (id.coll == Collective::kReduceScatter) {
      // The ranks permuted: shard p is still owner p's, over the permuted arenas, whose
      // exact sums are the same.
      expect_shards(id,
                    world.reduce_scatter_exact(arenas, id.op, delivery_of(id, trial), id.dtype),
                    reference, what);
      continue;
    }
    world.all_reduce_exact(arenas, id.op, delivery_of(id, trial), id.dtype);
    expect_reference(id, arenas, reference, what);
  }
  return reference;
}

}  // namespace

Digest make_golden_digest(const CaseId& id, std::uint32_t orders) {
  if (id.contract == Contract::kLibrarySum) {
    throw InputError("case " + format_case_id(id) +
                     ": library-sum has no golden digest (no portable bits)");
  }
  const std::vector<float> reduced =
      id.contract == Contract::kExact ? proven_exact(id, orders) : proven_fixed_order(id, orders);
  const Digest digest = digest_values(reduced.data(), reduced.size(), id.dtype);
  const Digest streamed = digest_case(id);
  if (streamed != digest) {
    throw InternalError("case " + format_case_id(id) + ": the streaming re-derivation gives " +
                        streamed.hex() + " but the reference " + digest.hex());
  }
  return digest;
}

}  // namespace rv
