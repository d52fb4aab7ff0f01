// The C ABI's reduce-scatter layout (docs/DESIGN.md §2.6): the core's padded shard plan, one
// rank's shard of it, for a caller that moves the bytes itself and reduces its shard's table
// with the stacked entry points (host_reduce.cc, cuda_dtype.cc).
#include <optional>
#include <string>

#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "core/error.h"
#include "core/shard_plan.h"

extern "C" rv_status rv_reduce_scatter_shard(size_t n, uint32_t world, uint32_t rank,
                                             size_t shard_size, size_t* begin, size_t* count,
                                             size_t* padded_shard_size) {
  return rv::capi::guarded("rv_reduce_scatter_shard", [&] {
    if (begin == nullptr || count == nullptr || padded_shard_size == nullptr) {
      throw rv::InputError(
          "a null output pointer (begin, count and padded_shard_size are "
          "written)");
    }
    RV_ENFORCE_GE(rv::InputError, world, 1u, "a reduce-scatter needs a world of at least one rank");
    RV_ENFORCE_LT(rv::InputError, rank, world, "the rank must be below the world size");
    // 0 is FSDP's size: an explicit 0 is valid only for n = 0, whose plan it is anyway.
    const std::optional<std::size_t> size =
        shard_size == 0 ? std::nullopt : std::optional<std::size_t>(shard_size);
    const rv::Shard shard = rv::padded_shard_plan(n, world, size)[rank];
    *begin = shard.begin;
    *count = shard.count;
    *padded_shard_size = size.value_or(rv::padded_shard_size(n, world));
  });
}
