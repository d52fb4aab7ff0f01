#include "verify/golden/golden_maker.h"

#include <cstring>
#include <sstream>
#include <vector>

#include "core/case_reduction.h"
#include "core/emulated_world.h"
#include "core/error.h"
#include "core/fold_law.h"

namespace rv {
namespace {

std::string bits_hex(float value) {
  std::ostringstream out;
  out << "0x" << std::hex << float_bits(value);
  return out.str();
}

}  // namespace

Digest make_golden_digest(const CaseId& id, std::uint32_t orders) {
  const std::vector<std::vector<float>> inputs = generate_case_arenas(id);
  const std::vector<float> reference = reference_fold(inputs, id.op);
  const Digest digest = digest_floats(reference.data(), reference.size());

  const EmulatedWorld world(id.world);
  std::vector<std::vector<float>> arenas;
  for (std::uint32_t trial = 0; trial < orders; ++trial) {
    arenas = inputs;
    // Trial 0 delivers in ascending order; the others shuffle every owner's arrivals.
    const DeliveryOrders delivery =
        trial == 0 ? DeliveryOrders{} : shuffled_delivery_orders(id.world, id.seed, trial);
    world.all_reduce(arenas, id.op, delivery);
    for (std::uint32_t r = 0; r < id.world; ++r) {
      if (std::memcmp(arenas[r].data(), reference.data(), reference.size() * sizeof(float)) == 0) {
        continue;
      }
      std::size_t i = 0;
      while (float_bits(arenas[r][i]) == float_bits(reference[i])) ++i;
      throw InternalError("case " + format_case_id(id) + ": EmulatedWorld under delivery order " +
                          std::to_string(trial) + " differs from the reference fold at rank " +
                          std::to_string(r) + " element " + std::to_string(i) + " (" +
                          bits_hex(arenas[r][i]) + " vs " + bits_hex(reference[i]) + ")");
    }
  }
  const Digest streamed = digest_case(id);
  if (streamed != digest) {
    throw InternalError("case " + format_case_id(id) + ": the streaming re-derivation gives " +
                        streamed.hex() + " but the reference fold " + digest.hex());
  }
  return digest;
}

}  // namespace rv
