// The one-GPU loopback world's dataflow (docs/DESIGN.md §5, transport cuda-loopback), over
// arenas that stay on the device: W logical ranks' arenas, the owners' stacked tables and the
// streams, made once and reduced any number of times (loopback_all_reduce, and the benchmark
// that measures the overlap).
//
// Each owner's shard moves and folds in pieces, pipelined as the fixed-order reducer does
// over a live transport: the copies of piece k + 1 (device-to-device, on several copy
// streams) land in one table while piece k is folded from the other (on the fold stream),
// and the reduced piece k is copied into every rank's arena (the all-gather) while piece
// k + 1 is folded; events order the streams. The fold is elementwise and each piece's table
// keeps slot r = the copy from rank r, so the pieces change no bit.
// No CUDA types here: host code of any target can include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/contract.h"
#include "core/oracle/emulated_world.h"

namespace rv {

// What one enqueue runs: the reduction, or, for the benchmark that shows how much of one
// hides under the other, only its copies or only its folds (then the arenas hold no sum).
enum class LoopbackWork : std::uint8_t { kReduce, kCopiesOnly, kFoldsOnly };

// Throws InputError unless `delivery` is empty or one permutation of [0, W) per owner.
void check_delivery_orders(const DeliveryOrders& delivery, std::uint32_t world);

class LoopbackPipeline {
 public:
  // W arenas of n floats on `device`, each owner's shard moved and folded in `pieces`
  // pieces (pieces beyond a shard's length are empty). 0: as many as a GPU rank of the
  // fixed-order reducer cuts it into (FixedOrderOptions::for_device's table size), so the
  // loopback world moves what a live GPU rank moves. The tables and the reduced shards start
  // poisoned (NaN bytes), so a slot no copy wrote shows (as NaNs in the first two pieces,
  // as a stale piece's bytes after). Throws InputError for bad
  // arguments, RuntimeFailure for device errors.
  LoopbackPipeline(int device, std::uint32_t world, std::size_t n, std::size_t pieces = 0);
  ~LoopbackPipeline();
  LoopbackPipeline(const LoopbackPipeline&) = delete;
  LoopbackPipeline& operator=(const LoopbackPipeline&) = delete;

  std::uint32_t world() const;
  std::size_t n() const;
  std::size_t pieces() const;
  // Rank r's arena: n floats of device memory, 256-byte aligned.
  float* arena(std::uint32_t rank) const;
  // Rank r's arena from and to the host, synchronous with all work on the device: for
  // bookkeeping, not timed paths. upload takes exactly n values.
  void upload(std::uint32_t rank, const std::vector<float>& values);
  std::vector<float> download(std::uint32_t rank) const;

  // Enqueues one reduction of every arena, in place, and returns. `delivery` as for
  // EmulatedWorld (empty: ascending): within a piece, owner p receives the copies in the
  // order delivery[p], spread over the copy streams, so they land unordered. Everything
  // enqueued ends on stream(): work enqueued there afterwards sees the reduced arenas.
  void enqueue(Op op, const DeliveryOrders& delivery, LoopbackWork work = LoopbackWork::kReduce);
  // The fold stream (a cudaStream_t): enqueue starts after the work already on it.
  void* stream() const;
  // Waits for the fold stream.
  void synchronize();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace rv
