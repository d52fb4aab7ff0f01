// A world with no transport library: W rank threads of this process move bytes by copying
// them out of each other's buffers, so the reducers' tests run (and fail) without Gloo or
// NCCL. Every collective is two meetings of all ranks: each rank posts what it brings, copies
// what it needs from the others' posts into its own buffers, and waits until every rank has
// done so before its buffers may change again. The ranks' transports
// (in_process_transport.h) move host bytes with memcpy; the one-GPU loopback
// (core/transport/cuda_loopback) is this world with device copies as the byte mover.
//
// With a delivery seed, the copies of every exchange into a rank are issued in a seeded
// shuffled order of the source ranks (a new one per exchange), while each copy still lands
// in its source rank's slot: the bits must not change, and the tests show they do not.
//
// Its library_sum is a stand-in "library" that adds in descending rank order: an association
// that is not the fixed-order one, so the library-sum checks (equal to fixed-order only where
// every association is exact or W <= 2) can fail here as they can over Gloo's ring.
//
// Like a real transport, every wait has a deadline (a DeadlineExceeded naming the ranks that
// did not come), and a rank whose transport is destroyed (its body returned or threw) is gone:
// a peer waiting for it gets a RuntimeFailure naming it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/transport/transport.h"

namespace rv::in_process {

class InProcessWorld {
 public:
  InProcessWorld(std::uint32_t world, std::chrono::milliseconds timeout,
                 std::optional<std::uint64_t> delivery_seed = std::nullopt);
  InProcessWorld(const InProcessWorld&) = delete;
  InProcessWorld& operator=(const InProcessWorld&) = delete;

  std::uint32_t world_size() const { return world_; }
  // Rank `rank`'s transport; the world must outlive it. One per rank.
  std::unique_ptr<Transport> connect(std::uint32_t rank);

  // The meeting every collective is made of (for the transport): `rank` posts `post` (valid
  // until the next meet of this rank) and waits until every rank has met as often; returns
  // every rank's post of this meeting, in rank order.
  std::vector<const void*> meet(std::uint32_t rank, const void* post);
  // The rank's transport is gone: whoever waits for it stops waiting.
  void leave(std::uint32_t rank);
  // The order of source ranks in which `rank`'s `trial`-th exchange copies into it: ascending
  // without a delivery seed, else shuffled_delivery_order (core/oracle/emulated_world.h).
  std::vector<std::uint32_t> delivery_order(std::uint32_t rank, std::uint64_t trial) const;

 private:
  const std::uint32_t world_;
  const std::chrono::milliseconds timeout_;
  const std::optional<std::uint64_t> delivery_seed_;
  std::mutex m_;
  std::condition_variable cv_;
  std::uint64_t generation_ = 0;
  std::vector<const void*> posts_, last_posts_;
  std::vector<bool> arrived_, left_;
  std::uint32_t arrived_count_ = 0;
};

}  // namespace rv::in_process
