#include "core/cuda/loopback_world.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_fold_device.h"
#include "core/cuda/device_buffer.h"
#include "core/error.h"
#include "core/shard_plan.h"

namespace rv {
namespace {

// Copies of one round run on this many streams at once, so a copy issued later may land
// first: the tables must not depend on arrival order, and here they could.
constexpr std::size_t kCopyStreams = 4;

// Each rank's arena starts on a 256-byte boundary, as its own cudaMalloc would.
constexpr std::size_t kArenaAlignment = 64;  // elements

std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

void check_arenas(const std::vector<std::vector<float>>& arenas) {
  RV_ENFORCE_GE(InputError, arenas.size(), std::size_t{1}, "the loopback world needs a rank");
  for (std::size_t r = 1; r < arenas.size(); ++r) {
    RV_ENFORCE_EQ(InputError, arenas[r].size(), arenas[0].size(), "arena length of rank", r,
                  "differs from rank 0");
  }
}

void check_delivery(const DeliveryOrders& delivery, std::uint32_t world) {
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

// The copy streams and the events that order them after, and before, the fold stream.
class CopyStreams {
 public:
  explicit CopyStreams(cudaStream_t fold_stream) : fold_stream_(fold_stream) {
    RV_CUDA_CHECK(cudaEventCreateWithFlags(&fold_done_, cudaEventDisableTiming));
    for (std::size_t s = 0; s < kCopyStreams; ++s) {
      RV_CUDA_CHECK(cudaStreamCreateWithFlags(&streams_[s], cudaStreamNonBlocking));
      RV_CUDA_CHECK(cudaEventCreateWithFlags(&copies_done_[s], cudaEventDisableTiming));
    }
  }
  ~CopyStreams() {
    for (std::size_t s = 0; s < kCopyStreams; ++s) {
      if (streams_[s] != nullptr) {
        (void)cudaStreamSynchronize(streams_[s]);
        (void)cudaStreamDestroy(streams_[s]);
      }
      if (copies_done_[s] != nullptr) (void)cudaEventDestroy(copies_done_[s]);
    }
    if (fold_done_ != nullptr) (void)cudaEventDestroy(fold_done_);
  }
  CopyStreams(const CopyStreams&) = delete;
  CopyStreams& operator=(const CopyStreams&) = delete;

  // Copies issued from now on start after everything enqueued on the fold stream so far.
  void start_after_fold_stream() {
    RV_CUDA_CHECK(cudaEventRecord(fold_done_, fold_stream_));
    for (cudaStream_t stream : streams_) RV_CUDA_CHECK(cudaStreamWaitEvent(stream, fold_done_, 0));
  }
  // Work enqueued on the fold stream from now on starts after every copy issued so far.
  void join_into_fold_stream() {
    for (std::size_t s = 0; s < kCopyStreams; ++s) {
      RV_CUDA_CHECK(cudaEventRecord(copies_done_[s], streams_[s]));
      RV_CUDA_CHECK(cudaStreamWaitEvent(fold_stream_, copies_done_[s], 0));
    }
  }
  void copy(float* dst, const float* src, std::size_t count) {
    if (count == 0) return;
    cudaStream_t stream = streams_[next_++ % kCopyStreams];
    RV_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  }

 private:
  cudaStream_t fold_stream_;
  std::array<cudaStream_t, kCopyStreams> streams_{};
  std::array<cudaEvent_t, kCopyStreams> copies_done_{};
  cudaEvent_t fold_done_ = nullptr;
  std::size_t next_ = 0;
};

}  // namespace

std::size_t stacked_slot_stride(std::size_t max_shard) { return round_up(max_shard, 4); }

std::vector<std::vector<float>> loopback_all_reduce(const std::vector<std::vector<float>>& arenas,
                                                    Op op, const DeliveryOrders& delivery,
                                                    int device) {
  check_arenas(arenas);
  const auto world = static_cast<std::uint32_t>(arenas.size());
  check_delivery(delivery, world);
  const std::size_t n = arenas[0].size();
  std::vector<std::vector<float>> reduced_arenas(world, std::vector<float>(n));
  if (n == 0) return reduced_arenas;

  const std::vector<Shard> plan = shard_plan(n, world);
  std::size_t max_shard = 0;
  for (const Shard& shard : plan) max_shard = std::max(max_shard, shard.count);
  const std::size_t stride = stacked_slot_stride(max_shard);
  const std::size_t pitch = round_up(n, kArenaAlignment);
  const std::size_t table = static_cast<std::size_t>(world) * stride;  // one owner's table

  CudaFoldDevice fold_device(device);
  const cuda_detail::ScopedDevice scope(device);
  DeviceBuffer arena_memory(device, static_cast<std::size_t>(world) * pitch * sizeof(float));
  DeviceBuffer table_memory(device, static_cast<std::size_t>(world) * table * sizeof(float));
  DeviceBuffer reduced_memory(device, static_cast<std::size_t>(world) * stride * sizeof(float));
  // Poison: a slot or element that no copy wrote shows up as NaNs, never as stale zeros.
  table_memory.fill_bytes(0xFF);
  reduced_memory.fill_bytes(0xFF);
  for (std::uint32_t r = 0; r < world; ++r) arena_memory.upload_floats(arenas[r], r * pitch);

  float* const arena_base = arena_memory.floats();
  float* const table_base = table_memory.floats();
  float* const reduced_base = reduced_memory.floats();
  const auto arena_of = [&](std::uint32_t rank) { return arena_base + rank * pitch; };

  CopyStreams copies(static_cast<cudaStream_t>(fold_device.stream()));
  copies.start_after_fold_stream();
  // Round k delivers, to every owner p, the k-th copy of its order: slot = source rank,
  // whatever the round.
  for (std::uint32_t k = 0; k < world; ++k) {
    for (std::uint32_t owner = 0; owner < world; ++owner) {
      const std::uint32_t source = delivery.empty() ? k : delivery[owner][k];
      const Shard shard = plan[owner];
      copies.copy(table_base + owner * table + source * stride, arena_of(source) + shard.begin,
                  shard.count);
    }
  }
  copies.join_into_fold_stream();
  for (std::uint32_t owner = 0; owner < world; ++owner) {
    fold_device.fold_stacked(table_base + owner * table, world, stride, plan[owner].count, op,
                             reduced_base + owner * stride);
  }
  // The all-gather: every reduced shard, as bytes, into every rank's arena.
  copies.start_after_fold_stream();
  for (std::uint32_t rank = 0; rank < world; ++rank) {
    for (std::uint32_t owner = 0; owner < world; ++owner) {
      const Shard shard = plan[owner];
      copies.copy(arena_of(rank) + shard.begin, reduced_base + owner * stride, shard.count);
    }
  }
  copies.join_into_fold_stream();
  fold_device.synchronize();
  for (std::uint32_t r = 0; r < world; ++r) {
    arena_memory.download(reduced_arenas[r].data(), n * sizeof(float), r * pitch * sizeof(float));
  }
  return reduced_arenas;
}

}  // namespace rv
