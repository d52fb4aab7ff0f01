#include "core/reducer/library_sum_reducer.h"

namespace rv {

void library_sum_all_reduce(Transport& transport, FoldDevice& device, float* arena, std::size_t n,
                            Op op) {
  device.synchronize();
  transport.library_sum(arena, n);
  // Never pre-scaled: the mean is the library's sum times 1/W, as in the fixed-order fold.
  device.finish_library_sum(arena, n, transport.world_size(), op);
  device.synchronize();
}

}  // namespace rv
