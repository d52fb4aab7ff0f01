// The fixed-order reducer (DESIGN.md §5): the sharded owner dataflow of EmulatedWorld over a
// live Transport. Every rank sends its copy of shard p to owner p; the owner receives the
// copies into a rank-indexed stacked buffer (slot r = the copy from rank r, whatever order
// they arrive in), folds them ascending with FoldDevice::fold_stacked (the reference's fold
// code), writes its reduced shard into its arena, and then every owner's reduced shard is
// sent to every other rank. Only bytes move between ranks; every float addition happens in
// the fold, so the bits depend on the addends and W alone.
#pragma once

#include <cstddef>

#include "core/contract.h"
#include "core/reducer/fold_device.h"
#include "core/transport/transport.h"

namespace rv {

class FixedOrderReducer {
 public:
  // The stacked scratch is allocated on `device` at the first call and reused (grown when a
  // later call needs more). Both references must outlive the reducer.
  FixedOrderReducer(Transport& transport, FoldDevice& device);
  ~FixedOrderReducer();
  FixedOrderReducer(const FixedOrderReducer&) = delete;
  FixedOrderReducer& operator=(const FixedOrderReducer&) = delete;

  // In place over the n floats of `arena` (in the device's memory); afterwards every rank
  // holds identical bits. Collective: every rank calls it with the same n and op (agree on
  // them first; a length mismatch is caught by the transport as an InputError). Uneven and
  // empty shards (n < W, n = 0) work.
  void all_reduce(float* arena, std::size_t n, Op op);

 private:
  float* stacked_scratch(std::size_t floats);

  Transport& transport_;
  FoldDevice& device_;
  float* stacked_ = nullptr;
  std::size_t stacked_capacity_ = 0;
};

}  // namespace rv
