#include "core/transport/in_process/in_process_world.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "core/deadline.h"
#include "core/dtype_law.h"
#include "core/error.h"
#include "core/oracle/emulated_world.h"
#include "core/transport/in_process/in_process_transport.h"

namespace rv::in_process {

InProcessTransport::InProcessTransport(InProcessWorld& world, std::uint32_t rank)
    : world_(world), rank_(rank) {}

InProcessTransport::~InProcessTransport() { world_.leave(rank_); }

void InProcessTransport::copy(void* dst, const void* src, std::size_t bytes) {
  std::memcpy(dst, src, bytes);
}

void InProcessTransport::copy_all(const std::vector<Copy>& copies) {
  for (const Copy& c : copies) copy(c.dst, c.src, c.bytes);
}

void InProcessTransport::copy_any(void* dst, bool /*dst_on_device*/, const void* src,
                                  bool /*src_on_device*/, std::size_t bytes) {
  std::memcpy(dst, src, bytes);
}

void InProcessTransport::all_gather(const void* in, void* out, std::size_t bytes) {
  settle();
  const BytesPost mine{in, bytes, on_device(in)};
  const bool out_on_device = on_device(out);
  const auto posts = meet(&mine);
  for (std::uint32_t p = 0; p < posts.size(); ++p) {
    const auto& theirs = *static_cast<const BytesPost*>(posts[p]);
    require_same("all_gather", p, theirs.bytes, bytes);
    if (bytes) {
      copy_any(static_cast<char*>(out) + p * bytes, out_on_device, theirs.data, theirs.on_device,
               bytes);
    }
  }
  settle();
  meet(nullptr);
}

void InProcessTransport::exchange(const ExchangePlan& plan) {
  settle();
  const auto posts = meet(&plan);
  // Every rank sees every plan, so a disagreement on the agreed value is the same error on
  // every rank, thrown before anything moves (after a second meeting: no rank may leave,
  // and free its plan, while another still reads it).
  if (plan.has_agreed_value) {
    const std::string disagreement = agreed_value_disagreement(plan, posts);
    if (!disagreement.empty()) {
      meet(nullptr);
      throw InputError(disagreement);
    }
  }
  for (std::uint32_t p = 0; p < posts.size(); ++p) {
    const auto& theirs = *static_cast<const ExchangePlan*>(posts[p]);
    require_same("exchange", p, theirs.send_bytes[rank_], plan.recv_bytes[p]);
  }
  std::vector<Copy> copies;
  for (std::uint32_t p : world_.delivery_order(rank_, ++exchanges_)) {
    if (plan.recv_bytes[p] == 0) continue;
    const auto& theirs = *static_cast<const ExchangePlan*>(posts[p]);
    copies.push_back({static_cast<char*>(plan.recv) + plan.recv_offset[p],
                      static_cast<const char*>(theirs.send) + theirs.send_offset[rank_],
                      plan.recv_bytes[p]});
  }
  copy_all(copies);
  settle();
  meet(nullptr);
}

void InProcessTransport::broadcast(void* buf, std::size_t bytes, std::uint32_t root) {
  settle();
  const BytesPost mine{buf, bytes, on_device(buf)};
  const auto posts = meet(&mine);
  const auto& theirs = *static_cast<const BytesPost*>(posts[root]);
  require_same("broadcast", root, theirs.bytes, bytes);
  if (rank_ != root && bytes) copy_any(buf, mine.on_device, theirs.data, theirs.on_device, bytes);
  settle();
  meet(nullptr);
}

void InProcessTransport::barrier() { meet(nullptr); }

void InProcessTransport::library_sum(float* values, std::size_t n) {
  reduce<float>(values, n, "library_sum", [](const std::vector<const float*>& in, std::size_t i) {
    float sum = in.back()[i];
    for (std::size_t r = in.size() - 1; r-- > 0;) sum += in[r][i];
    return sum;
  });
}

void InProcessTransport::library_sum_half(void* values, std::size_t n, DType dtype) {
  // A stand-in for a library's half-precision sum, as library_sum's is for its float sum:
  // the ranks in descending order, each addition widened, added in binary32 and rounded
  // back to the format (what NCCL's and Gloo's half sums do per addition).
  reduce<std::uint16_t>(static_cast<std::uint16_t*>(values), n, "library_sum_half",
                        [dtype](const std::vector<const std::uint16_t*>& in, std::size_t i) {
                          std::uint16_t sum = in.back()[i];
                          for (std::size_t r = in.size() - 1; r-- > 0;) {
                            sum = half_bits(dtype, widen_half(dtype, sum) +
                                                       widen_half(dtype, in[r][i]));
                          }
                          return sum;
                        });
}

std::int64_t InProcessTransport::max_int(std::int64_t value) {
  std::int64_t result = value;
  reduce<std::int64_t>(&result, 1, "max_int", max_of);
  return result;
}

void InProcessTransport::all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) {
  if (op == IntReduction::kMax) {
    reduce<std::int64_t>(values, n, "all_reduce_int64", max_of);
    return;
  }
  reduce<std::int64_t>(values, n, "all_reduce_int64",
                       [](const std::vector<const std::int64_t*>& in, std::size_t i) {
                         std::int64_t sum = 0;
                         for (const std::int64_t* x : in) sum += x[i];
                         return sum;
                       });
}

std::int64_t InProcessTransport::max_of(const std::vector<const std::int64_t*>& in, std::size_t i) {
  std::int64_t m = in[0][i];
  for (const std::int64_t* x : in) m = std::max(m, x[i]);
  return m;
}

std::string InProcessTransport::agreed_value_disagreement(
    const ExchangePlan& plan, const std::vector<const void*>& posts) const {
  std::string text;
  bool differ = false;
  for (std::uint32_t p = 0; p < posts.size(); ++p) {
    const auto& theirs = *static_cast<const ExchangePlan*>(posts[p]);
    differ = differ || theirs.agreed_value != plan.agreed_value;
    text += (p ? ", rank " : " rank ") + std::to_string(p) + " has " +
            std::to_string(theirs.agreed_value);
  }
  if (!differ) return "";
  return name() + " exchange: ranks disagree on " + plan.agreed_value_name + ":" + text;
}

void InProcessTransport::require_same(const char* what, std::uint32_t peer, std::size_t theirs,
                                      std::size_t mine) const {
  if (theirs != mine) {
    throw InputError(name() + " " + what + ": rank " + std::to_string(rank_) + " expects " +
                     std::to_string(mine) + " bytes, rank " + std::to_string(peer) + " has " +
                     std::to_string(theirs));
  }
}

template <typename T, typename Combine>
void InProcessTransport::reduce(T* values, std::size_t n, const char* what, Combine combine) {
  const BytesPost mine{values, n * sizeof(T)};
  const auto posts = meet(&mine);
  std::vector<const T*> in;
  for (std::uint32_t p = 0; p < posts.size(); ++p) {
    const auto& theirs = *static_cast<const BytesPost*>(posts[p]);
    require_same(what, p, theirs.bytes, mine.bytes);
    in.push_back(static_cast<const T*>(theirs.data));
  }
  std::vector<T> result(n);
  for (std::size_t i = 0; i < n; ++i) result[i] = combine(in, i);
  meet(nullptr);
  std::copy(result.begin(), result.end(), values);
}

InProcessWorld::InProcessWorld(std::uint32_t world, std::chrono::milliseconds timeout,
                               std::optional<std::uint64_t> delivery_seed)
    : world_(world),
      timeout_(timeout),
      delivery_seed_(delivery_seed),
      posts_(world),
      last_posts_(world),
      arrived_(world, false),
      left_(world, false) {}

std::unique_ptr<Transport> InProcessWorld::connect(std::uint32_t rank) {
  return std::make_unique<InProcessTransport>(*this, rank);
}

std::vector<const void*> InProcessWorld::meet(std::uint32_t rank, const void* post) {
  std::unique_lock<std::mutex> lock(m_);
  posts_[rank] = post;
  arrived_[rank] = true;
  if (++arrived_count_ == world_) {
    last_posts_ = posts_;
    std::fill(arrived_.begin(), arrived_.end(), false);
    arrived_count_ = 0;
    ++generation_;
    cv_.notify_all();
    return last_posts_;
  }
  const std::uint64_t generation = generation_;
  auto missing = [&] {
    std::vector<std::uint32_t> ranks;
    for (std::uint32_t r = 0; r < world_; ++r) {
      if (!arrived_[r]) ranks.push_back(r);
    }
    return ranks;
  };
  auto gone = [&] {
    std::vector<std::uint32_t> ranks;
    for (std::uint32_t r = 0; r < world_; ++r) {
      if (!arrived_[r] && left_[r]) ranks.push_back(r);
    }
    return ranks;
  };
  const bool met =
      cv_.wait_for(lock, timeout_, [&] { return generation_ != generation || !gone().empty(); });
  if (generation_ != generation) return last_posts_;
  const std::vector<std::uint32_t> absent = met ? gone() : missing();
  // This rank gives up: it takes its post back, so the meeting cannot complete without it.
  arrived_[rank] = false;
  --arrived_count_;
  if (met) {
    throw RuntimeFailure("in-process world: rank " + std::to_string(rank) + ": " +
                         ranks_text(absent) + " gone (transport closed)");
  }
  throw DeadlineExceeded("in-process world: rank " + std::to_string(rank) + ": " +
                         ranks_text(absent) + " did not come within " + format_duration(timeout_));
}

std::vector<std::uint32_t> InProcessWorld::delivery_order(std::uint32_t rank,
                                                          std::uint64_t trial) const {
  if (delivery_seed_) return shuffled_delivery_order(world_, *delivery_seed_, trial, rank);
  std::vector<std::uint32_t> order(world_);
  std::iota(order.begin(), order.end(), 0u);
  return order;
}

void InProcessWorld::leave(std::uint32_t rank) {
  std::lock_guard<std::mutex> lock(m_);
  left_[rank] = true;
  cv_.notify_all();
}

}  // namespace rv::in_process
