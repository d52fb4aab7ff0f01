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

// Trial 0 delivers in ascending order; the others shuffle every owner's arrivals.
DeliveryOrders delivery_of(const CaseId& id, std::uint32_t trial) {
  return trial == 0 ? DeliveryOrders{} : shuffled_delivery_orders(id.world, id.seed, trial);
}

// Fixed-order: EmulatedWorld's owner dataflow under every delivery order equals the straight
// ascending fold.
std::vector<float> proven_fixed_order(const CaseId& id, std::uint32_t orders) {
  const Arenas inputs = generate_case_arenas(id);
  std::vector<float> reference = reference_fold(inputs, id.op, id.dtype);
  const EmulatedWorld world(id.world);
  for (std::uint32_t trial = 0; trial < orders; ++trial) {
    Arenas arenas = inputs;
    world.all_reduce(arenas, id.op, delivery_of(id, trial), id.dtype);
    expect_reference(id, arenas, reference,
                     "EmulatedWorld under delivery order " + std::to_string(trial));
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
    world.all_reduce_exact(arenas, id.op, delivery_of(id, trial), id.dtype);
    expect_reference(id, arenas, reference,
                     "EmulatedWorld's exact dataflow under delivery order " +
                         std::to_string(trial) + (permuted ? " with the ranks permuted" : ""));
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
