#include "core/oracle/case_reduction.h"

#include <algorithm>

#include "core/dtype_arrays.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"
#include "core/fold.h"

namespace rv {

std::vector<std::vector<float>> generate_case_arenas(const CaseId& id) {
  validate_case_id(id);
  std::vector<std::vector<float>> arenas;
  arenas.reserve(id.world);
  for (std::uint32_t r = 0; r < id.world; ++r) {
    arenas.push_back(generate_arena(id.arena(), r, static_cast<std::size_t>(id.count)));
  }
  return arenas;
}

void stream_reference_reduction(const CaseId& id, const ReducedBlockSink& sink) {
  validate_case_id(id);
  // 16 Ki elements per rank: W = 256 needs 16 MiB of slots, and a block is large enough
  // that the per-block overheads vanish against generation.
  constexpr std::size_t kBlock = std::size_t{1} << 14;
  static_assert(kBlock % exact::kBlock == 0, "exact windows must not straddle two blocks");
  const std::size_t block = std::min<std::size_t>(kBlock, static_cast<std::size_t>(id.count));
  std::vector<float> slots(block * id.world);
  std::vector<float> reduced(block);
  for (std::uint64_t begin = 0; begin < id.count; begin += block) {
    const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(block, id.count - begin));
    for (std::uint32_t r = 0; r < id.world; ++r) {
      generate_arena_slice(id.arena(), r, begin, count, slots.data() + r * block);
    }
    // Blocks start at multiples of kBlock, which is a multiple of the exact contract's
    // window blocks, so the exact windows are those of the whole arena.
    if (id.contract == Contract::kExact) {
      exact_reduce_stacked(slots.data(), id.world, block, count, id.op, reduced.data(),
                           id.dtype);
    } else {
      fold_stacked(slots.data(), id.world, block, count, id.op, reduced.data());
      round_to_dtype_in_place(reduced.data(), count, id.dtype);
    }
    sink(reduced.data(), count);
  }
}

}  // namespace rv
