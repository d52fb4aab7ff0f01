// One rank's transport of an InProcessWorld (in_process_world.h), with its byte mover as the
// part a world over other memory replaces: here host memcpy; the one-GPU loopback
// (core/transport/cuda_loopback) copies device to device on the rank's stream. Every
// collective is written once, over the hooks below: each rank posts what it brings, pulls
// what it needs from the others' posts into its own buffers, settles its copies, and meets
// again before any buffer may change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/transport/in_process/in_process_world.h"
#include "core/transport/transport.h"

namespace rv::in_process {

class InProcessTransport : public Transport {
 public:
  InProcessTransport(InProcessWorld& world, std::uint32_t rank);
  ~InProcessTransport() override;  // the rank leaves the world

  std::uint32_t rank() const override { return rank_; }
  std::uint32_t world_size() const override { return world_.world_size(); }
  std::string name() const override { return "in-process"; }
  std::string library_version() const override {
    return "in-process (shared memory; library sum in descending rank order)";
  }

  void all_gather(const void* in, void* out, std::size_t bytes) override;
  // The copies into this rank are issued in the world's delivery order for this rank
  // (InProcessWorld::delivery_order): the slot is still the source rank's.
  void exchange(const ExchangePlan& plan) override;
  void broadcast(void* buf, std::size_t bytes, std::uint32_t root) override;
  void barrier() override;
  void library_sum(float* values, std::size_t n) override;
  void library_sum_half(void* values, std::size_t n, DType dtype) override;
  std::optional<std::string> library_sum_unavailable(DType) const override { return std::nullopt; }
  std::int64_t max_int(std::int64_t value) override;
  void all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) override;

 protected:
  // What a rank brings to a byte-moving collective; `on_device` as on_device(data) said.
  struct BytesPost {
    const void* data = nullptr;
    std::size_t bytes = 0;
    bool on_device = false;
  };

  // The byte mover. copy: bytes between this transport's buffers (an exchange's). copy_any:
  // bytes where either side may be host memory (all_gather, broadcast: the agreement records
  // live on the host), each side's kind as on_device said. Both may return before the bytes
  // land; settle() waits for them and for every other work of this rank issued so far. The
  // host versions copy at once and settle nothing.
  virtual void copy(void* dst, const void* src, std::size_t bytes);
  virtual void copy_any(void* dst, bool dst_on_device, const void* src, bool src_on_device,
                        std::size_t bytes);
  virtual bool on_device(const void* /*p*/) const { return false; }
  virtual void settle() {}
  // An exchange's copies into this rank, in delivery order: copy() each, by default.
  struct Copy {
    void* dst;
    const void* src;
    std::size_t bytes;
  };
  virtual void copy_all(const std::vector<Copy>& copies);

  // One meeting of the world (InProcessWorld::meet) for this rank.
  std::vector<const void*> meet(const void* post) { return world_.meet(rank_, post); }
  // Throws InputError unless a peer's size equals this rank's.
  void require_same(const char* what, std::uint32_t peer, std::size_t theirs,
                    std::size_t mine) const;

 private:
  static std::int64_t max_of(const std::vector<const std::int64_t*>& in, std::size_t i);
  std::string agreed_value_disagreement(const ExchangePlan& plan,
                                        const std::vector<const void*>& posts) const;
  // An element-wise all-reduce of host values: result[i] = combine(every rank's values, i).
  // The result is written only after the second meeting, when no rank reads these values.
  template <typename T, typename Combine>
  void reduce(T* values, std::size_t n, const char* what, Combine combine);

  InProcessWorld& world_;
  const std::uint32_t rank_;
  std::uint64_t exchanges_ = 0;  // this rank's exchanges so far: the delivery trial
};

}  // namespace rv::in_process
