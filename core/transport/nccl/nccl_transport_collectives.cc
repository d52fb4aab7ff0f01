// The NCCL transport's collectives: all_gather (host memory staged through device memory),
// exchange, broadcast, barrier and the all-reduces, each enqueued on the transport's stream
// and waited for under its watchdog (NcclTransport::complete, nccl_transport.cc). Started
// exchanges are in nccl_transport_pending.cc.
#include <cstring>
#include <sstream>
#include <vector>

#include "core/cuda/cuda_check.h"
#include "core/deadline.h"
#include "core/error.h"
#include "core/transport/nccl/nccl_api.h"
#include "core/transport/nccl/nccl_transport_detail.h"

namespace rv::nccl_detail {

namespace {

// Device (or managed) memory NCCL can use directly; anything else is host memory.
bool is_device_memory(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();  // an unknown pointer is host memory, not a sticky error
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

}  // namespace

// NCCL cannot survive a send and a receive of different sizes, so an exchange whose counts
// are not vouched for gathers every rank's row (agreed value, send counts, receive counts)
// first; every rank sees every row, so a disagreement is the same InputError on all of them.
void NcclTransport::check_exchange_agreement(const ExchangePlan& plan) {
  const std::size_t w = world_;
  std::vector<std::uint64_t> row(1 + 2 * w), rows(row.size() * w);
  row[0] = plan.has_agreed_value ? plan.agreed_value : 0;
  for (std::size_t p = 0; p < w; ++p) {
    row[1 + p] = plan.send_bytes[p];
    row[1 + w + p] = plan.recv_bytes[p];
  }
  all_gather(row.data(), rows.data(), row.size() * sizeof(std::uint64_t));
  auto at = [&](std::size_t rank, std::size_t i) { return rows[rank * row.size() + i]; };
  std::ostringstream out;
  if (plan.has_agreed_value) {
    bool differ = false;
    for (std::size_t r = 0; r < w; ++r) differ = differ || at(r, 0) != at(0, 0);
    if (differ) {
      out << "nccl exchange on rank " << rank_ << " of " << world_ << ": ranks disagree on "
          << plan.agreed_value_name << ":";
      for (std::size_t r = 0; r < w; ++r)
        out << (r ? "," : "") << " rank " << r << " has " << at(r, 0);
      throw InputError(out.str());
    }
  }
  for (std::size_t from = 0; from < w; ++from) {
    for (std::size_t to = 0; to < w; ++to) {
      if (at(from, 1 + to) != at(to, 1 + w + from)) {
        out << "nccl exchange on rank " << rank_ << " of " << world_ << ": ranks disagree on byte "
            << "counts: rank " << from << " sends " << at(from, 1 + to) << " to rank " << to
            << ", which expects " << at(to, 1 + w + from);
        throw InputError(out.str());
      }
    }
  }
}

void NcclTransport::grow_staging(std::size_t bytes) {
  if (bytes <= staging_bytes_) return;
  if (staging_device_ != nullptr) RV_CUDA_CHECK(cudaFree(staging_device_));
  if (staging_host_ != nullptr) RV_CUDA_CHECK(cudaFreeHost(staging_host_));
  staging_device_ = nullptr;
  staging_host_ = nullptr;
  staging_bytes_ = 0;
  RV_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&staging_device_), bytes));
  RV_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&staging_host_), bytes));
  staging_bytes_ = bytes;
}

void NcclTransport::all_gather(const void* in, void* out, std::size_t bytes) {
  const cuda_detail::ScopedDevice scope(device_);
  begin("all-gather");
  if (bytes == 0) return;
  if (is_device_memory(in) && is_device_memory(out)) {
    check_enqueue(api().all_gather(in, out, bytes, ncclUint8, comm_, stream_), "all-gather");
    complete("all-gather");
    return;
  }
  // Host records (agree_across_ranks, the reducers' length checks): staged through device
  // memory, in stream order, and copied back into pinned memory so the wait keeps its
  // deadline.
  const std::size_t gathered = bytes * world_;
  grow_staging(bytes + gathered);
  std::memcpy(staging_host_, in, bytes);
  RV_CUDA_CHECK(
      cudaMemcpyAsync(staging_device_, staging_host_, bytes, cudaMemcpyHostToDevice, stream_));
  check_enqueue(
      api().all_gather(staging_device_, staging_device_ + bytes, bytes, ncclUint8, comm_, stream_),
      "all-gather (staged from host memory)");
  wait_enqueued("all-gather (staged from host memory)", Deadline(timeout_));
  RV_CUDA_CHECK(cudaMemcpyAsync(staging_host_ + bytes, staging_device_ + bytes, gathered,
                                cudaMemcpyDeviceToHost, stream_));
  complete("all-gather (staged from host memory)");
  std::memcpy(out, staging_host_ + bytes, gathered);
}

void NcclTransport::check_plan_shape(const ExchangePlan& plan) const {
  const auto world = static_cast<std::size_t>(world_);
  RV_ENFORCE_EQ(InputError, plan.send_offset.size(), world, "exchange: send offsets per peer");
  RV_ENFORCE_EQ(InputError, plan.send_bytes.size(), world, "exchange: send sizes per peer");
  RV_ENFORCE_EQ(InputError, plan.recv_offset.size(), world, "exchange: receive offsets per peer");
  RV_ENFORCE_EQ(InputError, plan.recv_bytes.size(), world, "exchange: receive sizes per peer");
  RV_ENFORCE_EQ(InputError, plan.send_bytes[rank_], plan.recv_bytes[rank_],
                "exchange: the own slot's send and receive sizes of rank", rank_);
}

void NcclTransport::enqueue_exchange(const ExchangePlan& plan, cudaStream_t stream) {
  const auto* send = static_cast<const unsigned char*>(plan.send);
  auto* recv = static_cast<unsigned char*>(plan.recv);
  if (plan.send_bytes[rank_] != 0) {  // the own slot: a device copy, in stream order
    RV_CUDA_CHECK(cudaMemcpyAsync(recv + plan.recv_offset[rank_], send + plan.send_offset[rank_],
                                  plan.send_bytes[rank_], cudaMemcpyDeviceToDevice, stream));
  }
  check_enqueue(api().group_start(), "exchange (ncclGroupStart)");
  for (std::uint32_t peer = 0; peer < world_; ++peer) {
    if (peer == rank_) continue;
    if (plan.send_bytes[peer] != 0) {
      check_enqueue(api().send(send + plan.send_offset[peer], plan.send_bytes[peer], ncclUint8,
                               static_cast<int>(peer), comm_, stream),
                    "exchange (ncclSend)");
    }
    if (plan.recv_bytes[peer] != 0) {
      check_enqueue(api().recv(recv + plan.recv_offset[peer], plan.recv_bytes[peer], ncclUint8,
                               static_cast<int>(peer), comm_, stream),
                    "exchange (ncclRecv)");
    }
  }
  check_enqueue(api().group_end(), "exchange (ncclGroupEnd)");
}

void NcclTransport::exchange(const ExchangePlan& plan) {
  check_plan_shape(plan);
  if (!plan.counts_agreed && world_ > 1) check_exchange_agreement(plan);
  const cuda_detail::ScopedDevice scope(device_);
  begin("exchange");
  enqueue_exchange(plan, stream_);
  complete("exchange");
}

void NcclTransport::broadcast(void* buf, std::size_t bytes, std::uint32_t root) {
  RV_ENFORCE_LT(InputError, root, world_, "broadcast root");
  const cuda_detail::ScopedDevice scope(device_);
  begin("broadcast");
  if (bytes == 0) return;
  check_enqueue(api().broadcast(buf, buf, bytes, ncclUint8, static_cast<int>(root), comm_, stream_),
                "broadcast");
  complete("broadcast");
}

void NcclTransport::barrier() {
  const cuda_detail::ScopedDevice scope(device_);
  begin("barrier");
  // An all-reduce completes on no rank before every rank has entered it.
  check_enqueue(api().all_reduce(device_scratch_ + 1, device_scratch_ + 1, 1, ncclInt64, ncclMax,
                                 comm_, stream_),
                "barrier");
  complete("barrier");
}

void NcclTransport::library_sum(float* values, std::size_t n) {
  const cuda_detail::ScopedDevice scope(device_);
  begin("library sum (ncclAllReduce)");
  if (n == 0) return;
  check_enqueue(api().all_reduce(values, values, n, ncclFloat32, ncclSum, comm_, stream_),
                "library sum (ncclAllReduce)");
  complete("library sum (ncclAllReduce)");
}

// The library's own half-precision sum (docs/DESIGN.md §2.5): ncclAllReduce of the format's
// 2-byte elements with ncclBfloat16 / ncclFloat16, which rounds every partial sum to the
// dtype; the caller widens the result and finishes the mean. Enqueued and watched as the
// float sum is. f32 is not a half dtype: library_sum takes it.
void NcclTransport::library_sum_half(void* values, std::size_t n, DType dtype) {
  if (dtype == DType::kF32) {
    throw InputError("NCCL library_sum_half on " + where() +
                     ": f32 is not a half-precision dtype (library_sum sums binary32)");
  }
  const bool bf16 = dtype == DType::kBF16;
  const char* what = bf16 ? "library sum bf16 (ncclAllReduce ncclBfloat16)"
                          : "library sum f16 (ncclAllReduce ncclFloat16)";
  const cuda_detail::ScopedDevice scope(device_);
  begin(what);
  if (n == 0) return;
  check_enqueue(api().all_reduce(values, values, n, bf16 ? ncclBfloat16 : ncclFloat16, ncclSum,
                                 comm_, stream_),
                what);
  complete(what);
}

// The library-sum contract's reduce-scatter (docs/DESIGN.md §2.6): ncclReduceScatter with
// NCCL's own sum and association order, in place (rank r's shard lands at r × shard_size, the
// layout NCCL defines as in place). The caller widens and finishes the mean.
void NcclTransport::library_reduce_scatter(void* values, std::size_t shard_size, DType dtype) {
  const ncclDataType_t type = dtype == DType::kF32    ? ncclFloat32
                              : dtype == DType::kBF16 ? ncclBfloat16
                                                      : ncclFloat16;
  const std::size_t element = dtype == DType::kF32 ? 4 : 2;
  const char* what = "library reduce-scatter (ncclReduceScatter)";
  const cuda_detail::ScopedDevice scope(device_);
  begin(what);
  if (shard_size == 0) return;
  void* own = static_cast<char*>(values) + rank_ * shard_size * element;
  check_enqueue(api().reduce_scatter(values, own, shard_size, type, ncclSum, comm_, stream_), what);
  complete(what);
}

void NcclTransport::all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) {
  const cuda_detail::ScopedDevice scope(device_);
  const char* what =
      op == IntReduction::kSum ? "int64 sum (ncclAllReduce)" : "int64 max (ncclAllReduce)";
  begin(what);
  if (n == 0) return;
  check_enqueue(api().all_reduce(values, values, n, ncclInt64,
                                 op == IntReduction::kSum ? ncclSum : ncclMax, comm_, stream_),
                what);
  complete(what);
}

std::int64_t NcclTransport::max_int(std::int64_t value) {
  const cuda_detail::ScopedDevice scope(device_);
  begin("integer max (ncclAllReduce)");
  *host_scratch_ = value;
  RV_CUDA_CHECK(cudaMemcpyAsync(device_scratch_, host_scratch_, sizeof value,
                                cudaMemcpyHostToDevice, stream_));
  check_enqueue(
      api().all_reduce(device_scratch_, device_scratch_, 1, ncclInt64, ncclMax, comm_, stream_),
      "integer max (ncclAllReduce)");
  // Non-blocking NCCL may still be enqueueing its kernel: the copy back must come after it.
  wait_enqueued("integer max (ncclAllReduce)", Deadline(timeout_));
  RV_CUDA_CHECK(cudaMemcpyAsync(host_scratch_, device_scratch_, sizeof value,
                                cudaMemcpyDeviceToHost, stream_));
  complete("integer max (ncclAllReduce)");
  return *host_scratch_;
}

}  // namespace rv::nccl_detail
