#include "core/cuda/loopback_world.h"

#include <cstdint>

#include "core/cuda/loopback_pipeline.h"
#include "core/error.h"

namespace rv {
namespace {

void check_arenas(const std::vector<std::vector<float>>& arenas) {
  RV_ENFORCE_GE(InputError, arenas.size(), std::size_t{1}, "the loopback world needs a rank");
  for (std::size_t r = 1; r < arenas.size(); ++r) {
    RV_ENFORCE_EQ(InputError, arenas[r].size(), arenas[0].size(), "arena length of rank", r,
                  "differs from rank 0");
  }
}

}  // namespace

std::size_t stacked_slot_stride(std::size_t max_shard) { return (max_shard + 3) / 4 * 4; }

std::vector<std::vector<float>> loopback_all_reduce(const std::vector<std::vector<float>>& arenas,
                                                    Op op, const DeliveryOrders& delivery,
                                                    int device, std::size_t pieces) {
  // Bad input is refused before any CUDA call.
  check_arenas(arenas);
  const auto world = static_cast<std::uint32_t>(arenas.size());
  check_delivery_orders(delivery, world);
  const std::size_t n = arenas[0].size();
  std::vector<std::vector<float>> reduced_arenas(world);
  if (n == 0) return reduced_arenas;

  LoopbackPipeline pipeline(device, world, n, pieces);
  for (std::uint32_t r = 0; r < world; ++r) pipeline.upload(r, arenas[r]);
  pipeline.enqueue(op, delivery);
  pipeline.synchronize();
  for (std::uint32_t r = 0; r < world; ++r) reduced_arenas[r] = pipeline.download(r);
  return reduced_arenas;
}

}  // namespace rv
