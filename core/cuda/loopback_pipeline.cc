#include "core/cuda/loopback_pipeline.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_fold_device.h"
#include "core/cuda/device_buffer.h"
#include "core/error.h"
#include "core/reducer/fixed_order_reducer.h"
#include "core/shard_plan.h"

namespace rv {
namespace {

// Copies of one piece run on this many streams at once, so a copy issued later may land
// first: the tables must not depend on arrival order, and here they could.
constexpr std::size_t kCopyStreams = 4;

// Each rank's arena starts on a 256-byte boundary, as its own cudaMalloc would.
constexpr std::size_t kArenaAlignment = 64;  // elements
// Floats per 16-byte unit: the fold kernel's vector path needs every slot at its output's
// phase within one.
constexpr std::size_t kLane = 4;

std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::size_t phase_of(const float* p) {
  return (reinterpret_cast<std::uintptr_t>(p) / sizeof(float)) % kLane;
}

// Piece k of P of a shard, cut as the fixed-order reducer cuts it.
Shard piece_of(const Shard& shard, std::size_t k, std::size_t pieces) {
  const std::size_t from = shard.count * k / pieces;
  const std::size_t to = shard.count * (k + 1) / pieces;
  return Shard{shard.begin + from, to - from};
}

// The pieces the fixed-order reducer cuts a GPU rank's shard into (its rule, with its
// device's table size): shard 0 is the largest, so its table sets the count.
std::size_t reducer_pieces(const FoldDevice& device, const std::vector<Shard>& plan) {
  const std::size_t limit = FixedOrderOptions::for_device(device).piece_table_bytes;
  const std::size_t table_bytes = plan[0].count * sizeof(float) * plan.size();
  if (limit == 0 || table_bytes <= limit) return 1;
  return (table_bytes + limit - 1) / limit;
}

// The copy streams and the events that order them against the fold stream.
class CopyStreams {
 public:
  CopyStreams(int device, cudaStream_t fold_stream) : device_(device), fold_stream_(fold_stream) {
    const cuda_detail::ScopedDevice scope(device_);
    RV_CUDA_CHECK(cudaEventCreateWithFlags(&fold_mark_, cudaEventDisableTiming));
    for (std::size_t s = 0; s < kCopyStreams; ++s) {
      RV_CUDA_CHECK(cudaStreamCreateWithFlags(&streams_[s], cudaStreamNonBlocking));
      RV_CUDA_CHECK(cudaEventCreateWithFlags(&scattered_[s], cudaEventDisableTiming));
      RV_CUDA_CHECK(cudaEventCreateWithFlags(&copied_[s], cudaEventDisableTiming));
    }
  }
  ~CopyStreams() {
    const cuda_detail::ScopedDevice scope(device_);
    for (std::size_t s = 0; s < kCopyStreams; ++s) {
      if (streams_[s] != nullptr) {
        (void)cudaStreamSynchronize(streams_[s]);
        (void)cudaStreamDestroy(streams_[s]);
      }
      if (scattered_[s] != nullptr) (void)cudaEventDestroy(scattered_[s]);
      if (copied_[s] != nullptr) (void)cudaEventDestroy(copied_[s]);
    }
    if (fold_mark_ != nullptr) (void)cudaEventDestroy(fold_mark_);
  }
  CopyStreams(const CopyStreams&) = delete;
  CopyStreams& operator=(const CopyStreams&) = delete;

  // Copies issued from now on start after everything enqueued on the fold stream so far.
  void start_after_fold_stream() {
    RV_CUDA_CHECK(cudaEventRecord(fold_mark_, fold_stream_));
    for (cudaStream_t stream : streams_) RV_CUDA_CHECK(cudaStreamWaitEvent(stream, fold_mark_, 0));
  }
  // Marks the copies issued so far as one piece's scatter, for fold_waits_for_scatter.
  void mark_scatter() {
    for (std::size_t s = 0; s < kCopyStreams; ++s) {
      RV_CUDA_CHECK(cudaEventRecord(scattered_[s], streams_[s]));
    }
  }
  // Work enqueued on the fold stream from now on starts after the copies marked by the last
  // mark_scatter, not after copies issued since (the all-gather of the piece before).
  void fold_waits_for_scatter() {
    for (cudaEvent_t event : scattered_) RV_CUDA_CHECK(cudaStreamWaitEvent(fold_stream_, event, 0));
  }
  // Work enqueued on the fold stream from now on starts after every copy issued so far.
  void join_into_fold_stream() {
    for (std::size_t s = 0; s < kCopyStreams; ++s) {
      RV_CUDA_CHECK(cudaEventRecord(copied_[s], streams_[s]));
      RV_CUDA_CHECK(cudaStreamWaitEvent(fold_stream_, copied_[s], 0));
    }
  }
  void copy(float* dst, const float* src, std::size_t count) {
    if (count == 0) return;
    cudaStream_t stream = streams_[next_++ % kCopyStreams];
    RV_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  }

 private:
  int device_;
  cudaStream_t fold_stream_;
  std::array<cudaStream_t, kCopyStreams> streams_{};
  std::array<cudaEvent_t, kCopyStreams> scattered_{};
  std::array<cudaEvent_t, kCopyStreams> copied_{};
  cudaEvent_t fold_mark_ = nullptr;
  std::size_t next_ = 0;
};

}  // namespace

void check_delivery_orders(const DeliveryOrders& delivery, std::uint32_t world) {
  if (delivery.empty()) return;
  RV_ENFORCE_EQ(InputError, delivery.size(), static_cast<std::size_t>(world),
                "one delivery order per owner");
  for (std::uint32_t owner = 0; owner < world; ++owner) {
    std::vector<bool> seen(world, false);
    RV_ENFORCE_EQ(InputError, delivery[owner].size(), static_cast<std::size_t>(world),
                  "delivery order of owner", owner, "must name every rank once");
    for (std::uint32_t source : delivery[owner]) {
      if (source >= world || seen[source]) {
        throw InputError("delivery order of owner " + std::to_string(owner) +
                         " is not a permutation of the ranks (bad or repeated rank " +
                         std::to_string(source) + ")");
      }
      seen[source] = true;
    }
  }
}

// Layout: the arenas at `pitch` floats apart; per table buffer (two when there are several
// pieces: piece k + 1 lands in one while piece k is folded from the other), one block per
// owner of W slots `slot_stride` apart plus a lane of slack, so the table can start at its
// output's phase; the reduced shards at `reduced_stride` apart, whole, so the all-gather of
// piece k reads what the fold of piece k wrote while piece k + 1's fold writes elsewhere.
struct LoopbackPipeline::State {
  State(int device, std::uint32_t world_size, std::size_t length, std::size_t piece_count)
      : world(world_size),
        n(length),
        plan(shard_plan(length, world_size)),
        fold(device),
        copies(device, static_cast<cudaStream_t>(fold.stream())) {
    pieces = piece_count != 0 ? piece_count : reducer_pieces(fold, plan);
    const std::size_t max_shard = plan[0].count;  // shard 0 is the largest
    slot_stride = round_up((max_shard + pieces - 1) / pieces, kLane);
    block = world * slot_stride + kLane;
    tables = pieces > 1 ? 2 : 1;
    reduced_stride = round_up(max_shard, kLane);
    pitch = round_up(n, kArenaAlignment);
    arenas = DeviceBuffer(device, world * pitch * sizeof(float));
    table_memory = DeviceBuffer(device, tables * world * block * sizeof(float));
    reduced = DeviceBuffer(device, world * reduced_stride * sizeof(float));
    table_memory.fill_bytes(0xFF);
    reduced.fill_bytes(0xFF);
  }

  float* arena(std::uint32_t rank) const { return arenas.floats() + rank * pitch; }
  // Where owner p's reduced piece k goes.
  float* out(std::uint32_t owner, std::size_t k) const {
    const Shard piece = piece_of(plan[owner], k, pieces);
    return reduced.floats() + owner * reduced_stride + (piece.begin - plan[owner].begin);
  }
  // Owner p's table for piece k, at the phase of its output (layout changes no bit).
  float* table(std::uint32_t owner, std::size_t k) const {
    float* start = table_memory.floats() + ((k % tables) * world + owner) * block;
    return start + (phase_of(out(owner, k)) + kLane - phase_of(start)) % kLane;
  }

  // Round r delivers, to every owner p, the r-th copy of its order: slot = source rank,
  // whatever the round.
  void scatter(std::size_t k, const DeliveryOrders& delivery) {
    for (std::uint32_t r = 0; r < world; ++r) {
      for (std::uint32_t owner = 0; owner < world; ++owner) {
        const std::uint32_t source = delivery.empty() ? r : delivery[owner][r];
        const Shard piece = piece_of(plan[owner], k, pieces);
        copies.copy(table(owner, k) + source * slot_stride, arena(source) + piece.begin,
                    piece.count);
      }
    }
  }
  void fold_piece(std::size_t k, Op op) {
    for (std::uint32_t owner = 0; owner < world; ++owner) {
      fold.fold_stacked(table(owner, k), world, slot_stride, piece_of(plan[owner], k, pieces).count,
                        op, out(owner, k));
    }
  }
  // The all-gather of piece k: every reduced piece, as bytes, into every rank's arena.
  void gather(std::size_t k) {
    for (std::uint32_t rank = 0; rank < world; ++rank) {
      for (std::uint32_t owner = 0; owner < world; ++owner) {
        const Shard piece = piece_of(plan[owner], k, pieces);
        copies.copy(arena(rank) + piece.begin, out(owner, k), piece.count);
      }
    }
  }

  std::uint32_t world;
  std::size_t n;
  std::vector<Shard> plan;
  std::size_t pieces = 1, slot_stride = 0, block = 0, tables = 1, reduced_stride = 0, pitch = 0;
  CudaFoldDevice fold;
  CopyStreams copies;
  DeviceBuffer arenas, table_memory, reduced;
};

LoopbackPipeline::LoopbackPipeline(int device, std::uint32_t world, std::size_t n,
                                   std::size_t pieces) {
  RV_ENFORCE_GE(InputError, world, 1u, "the loopback world needs a rank");
  state_ = std::make_unique<State>(device, world, n, pieces);
}

LoopbackPipeline::~LoopbackPipeline() = default;

std::uint32_t LoopbackPipeline::world() const { return state_->world; }
std::size_t LoopbackPipeline::n() const { return state_->n; }
std::size_t LoopbackPipeline::pieces() const { return state_->pieces; }
float* LoopbackPipeline::arena(std::uint32_t rank) const {
  RV_ENFORCE_LT(InputError, rank, state_->world, "loopback arena rank");
  return state_->arena(rank);
}
void LoopbackPipeline::upload(std::uint32_t rank, const std::vector<float>& values) {
  RV_ENFORCE_LT(InputError, rank, state_->world, "loopback arena rank");
  RV_ENFORCE_EQ(InputError, values.size(), state_->n, "values uploaded to loopback rank", rank);
  state_->arenas.upload_floats(values, rank * state_->pitch);
}
std::vector<float> LoopbackPipeline::download(std::uint32_t rank) const {
  RV_ENFORCE_LT(InputError, rank, state_->world, "loopback arena rank");
  return state_->arenas.download_floats(state_->n, rank * state_->pitch);
}
void* LoopbackPipeline::stream() const { return state_->fold.stream(); }
void LoopbackPipeline::synchronize() { state_->fold.synchronize(); }

// The order of enqueueing is the pipeline: the fold of piece k waits only for piece k's
// scatter (marked before the all-gather of piece k − 1 was issued), the scatter of piece
// k + 1 is issued before the copy streams are told to wait for fold k (it only needs fold
// k − 1, the last reader of its table, which they waited for already), and the all-gather
// of piece k waits for fold k.
void LoopbackPipeline::enqueue(Op op, const DeliveryOrders& delivery, LoopbackWork work) {
  State& s = *state_;
  check_delivery_orders(delivery, s.world);
  const bool copy = work != LoopbackWork::kFoldsOnly;
  const bool fold = work != LoopbackWork::kCopiesOnly;
  const cuda_detail::ScopedDevice scope(s.fold.device());
  s.copies.start_after_fold_stream();
  if (copy) s.scatter(0, delivery);
  s.copies.mark_scatter();
  for (std::size_t k = 0; k < s.pieces; ++k) {
    s.copies.fold_waits_for_scatter();
    if (fold) s.fold_piece(k, op);
    if (k + 1 < s.pieces) {
      if (copy) s.scatter(k + 1, delivery);
      s.copies.mark_scatter();
    }
    s.copies.start_after_fold_stream();
    if (copy) s.gather(k);
  }
  s.copies.join_into_fold_stream();
}

}  // namespace rv
