#include "core/cuda/nccl_transport.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <thread>
#include <utility>

#include "core/cuda/cuda_check.h"
#include "core/cuda/nccl_api.h"
#include "core/cuda/nccl_unique_id.h"
#include "core/deadline.h"
#include "core/error.h"

namespace rv {
namespace {

using Clock = Deadline::Clock;

// Polls of a collective start short (a collective of small messages completes in
// microseconds) and back off to 1 ms (a long wait costs little CPU).
Backoff collective_backoff() {
  return Backoff(std::chrono::microseconds(5), std::chrono::milliseconds(1));
}

// How long an abort may take before we stop waiting for it. ncclCommAbort stops NCCL's
// kernels and threads; should it itself wedge (a peer's socket half open), the error must
// still reach the user, so the abort runs on a helper thread and we wait this long at most.
constexpr std::chrono::seconds kAbortGrace{10};

class NcclTransport final : public Transport {
 public:
  NcclTransport(const NcclLibrary& library, const NcclConnectOptions& options);
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  std::uint32_t rank() const override { return rank_; }
  std::uint32_t world_size() const override { return world_; }
  std::string name() const override { return "nccl"; }
  std::string library_version() const override { return library_.describe(); }

  void all_gather(const void* in, void* out, std::size_t bytes) override;
  void exchange(const ExchangePlan& plan) override;
  void broadcast(void* buf, std::size_t bytes, std::uint32_t root) override;
  void barrier() override;
  void library_sum(float* values, std::size_t n) override;
  std::int64_t max_int(std::int64_t value) override;
  void all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) override;

 private:
  const NcclApi& api() const { return library_.api(); }
  std::string where() const {
    return "rank " + std::to_string(rank_) + " of " + std::to_string(world_) +
           " (cuda:" + std::to_string(device_) + ")";
  }
  void join(const NcclConnectOptions& options);
  void begin(const char* what);
  void check_enqueue(ncclResult_t result, const char* what);
  void wait_enqueued(const char* what, const Deadline& deadline);
  void complete(const char* what);
  [[noreturn]] void fail(const char* what, ncclResult_t result);
  [[noreturn]] void expire(const char* what, std::chrono::milliseconds waited);
  void abort_once() noexcept;
  void finalize() noexcept;

  const NcclLibrary& library_;
  std::uint32_t rank_;
  std::uint32_t world_;
  int device_;
  std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool own_stream_ = false;
  cudaEvent_t done_ = nullptr;
  std::int64_t* host_scratch_ = nullptr;  // pinned, so its copies never block the host
  std::int64_t* device_scratch_ = nullptr;
  // Staging for all-gathers of host memory (the agreement records): NCCL's kernels touch
  // device memory only. Grown on demand; pinned on the host side so the copy back can wait
  // with a deadline (complete) instead of blocking in a pageable cudaMemcpy.
  unsigned char* staging_device_ = nullptr;
  unsigned char* staging_host_ = nullptr;
  std::size_t staging_bytes_ = 0;
  void grow_staging(std::size_t bytes);
  bool broken_ = false;
  bool abort_hung_ = false;  // NCCL work may still run: leave memory and streams alone
};

NcclTransport::NcclTransport(const NcclLibrary& library, const NcclConnectOptions& options)
    : library_(library),
      rank_(options.rank),
      world_(options.world),
      device_(options.device),
      timeout_(options.timeout) {
  try {
    join(options);
  } catch (...) {
    abort_once();
    finalize();
    throw;
  }
}

void NcclTransport::join(const NcclConnectOptions& options) {
  // One deadline for the whole rendezvous: the id and the init together.
  const Deadline deadline(timeout_);
  ncclUniqueId id{};
  static_assert(sizeof id.internal == kNcclUniqueIdBytes, "NCCL_UNIQUE_ID_BYTES changed");
  if (rank_ == 0) {
    const ncclResult_t result = api().get_unique_id(&id);
    if (result != ncclSuccess) {
      throw RuntimeFailure("ncclGetUniqueId failed on " + where() + ": " +
                           api().get_error_string(result));
    }
    NcclIdRecord record;
    record.nonce = options.job_nonce;
    record.world = world_;
    std::memcpy(record.id.data(), id.internal, kNcclUniqueIdBytes);
    publish_nccl_id(options.job_dir, record);
  } else {
    const NcclIdRecord record =
        await_nccl_id(options.job_dir, options.job_nonce, rank_, world_, deadline);
    std::memcpy(id.internal, record.id.data(), kNcclUniqueIdBytes);
  }

  const cuda_detail::ScopedDevice scope(device_);
  if (options.stream != nullptr) {
    stream_ = static_cast<cudaStream_t>(options.stream);
  } else {
    RV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    own_stream_ = true;
  }
  RV_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  RV_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_scratch_), 2 * sizeof(std::int64_t)));
  RV_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&device_scratch_), 2 * sizeof(std::int64_t)));

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // no call blocks: every wait below has our deadline
  // Claim no newer config layout than the loaded library knows.
  config.version = static_cast<unsigned>(std::min(library_.version_code(), NCCL_VERSION_CODE));
  const ncclResult_t result = api().comm_init_rank_config(&comm_, static_cast<int>(world_), id,
                                                          static_cast<int>(rank_), &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    if (comm_ == nullptr) {
      throw RuntimeFailure("ncclCommInitRankConfig failed on " + where() + ": " +
                           api().get_error_string(result));
    }
    fail("init (ncclCommInitRankConfig)", result);
  }
  wait_enqueued("init (waiting for every rank to join)", deadline);
}

NcclTransport::~NcclTransport() { finalize(); }

void NcclTransport::finalize() noexcept {
  if (comm_ != nullptr && !broken_) {
    try {
      const cuda_detail::ScopedDevice scope(device_);
      const ncclResult_t result = api().comm_finalize(comm_);
      if (result != ncclSuccess && result != ncclInProgress) {
        abort_once();
      } else {
        wait_enqueued("finalize", Deadline(timeout_));  // aborts on its deadline
        if (comm_ != nullptr) {
          (void)api().comm_destroy(comm_);
          comm_ = nullptr;
        }
      }
    } catch (...) {
      // finalize is best effort: wait_enqueued has aborted the communicator already
    }
  }
  abort_once();
  if (abort_hung_) return;  // NCCL may still touch these: leaking them is the safe choice
  int previous = -1;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess && previous != device_;
  if (restore) (void)cudaSetDevice(device_);
  if (done_ != nullptr) (void)cudaEventDestroy(done_);
  if (device_scratch_ != nullptr) (void)cudaFree(device_scratch_);
  if (host_scratch_ != nullptr) (void)cudaFreeHost(host_scratch_);
  if (staging_device_ != nullptr) (void)cudaFree(staging_device_);
  if (staging_host_ != nullptr) (void)cudaFreeHost(staging_host_);
  staging_device_ = nullptr;
  staging_host_ = nullptr;
  if (own_stream_ && stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  done_ = nullptr;
  device_scratch_ = nullptr;
  host_scratch_ = nullptr;
  stream_ = nullptr;
  if (restore) (void)cudaSetDevice(previous);
}

void NcclTransport::abort_once() noexcept {
  if (comm_ == nullptr) return;
  const ncclComm_t comm = std::exchange(comm_, nullptr);  // abort frees it: never twice
  broken_ = true;
  try {
    auto aborted = std::make_shared<std::promise<void>>();
    std::future<void> done = aborted->get_future();
    std::thread([abort_comm = api().comm_abort, comm, device = device_, aborted] {
      (void)cudaSetDevice(device);
      (void)abort_comm(comm);
      aborted->set_value();
    }).detach();
    if (done.wait_for(kAbortGrace) != std::future_status::ready) abort_hung_ = true;
  } catch (...) {
    abort_hung_ = true;  // no thread: the communicator stays, leaked
  }
}

void NcclTransport::fail(const char* what, ncclResult_t result) {
  std::string message =
      std::string("NCCL ") + what + " failed on " + where() + ": " + api().get_error_string(result);
  if (comm_ != nullptr) {
    const char* detail = api().get_last_error(comm_);
    if (detail != nullptr && *detail != '\0') message += std::string(" (") + detail + ")";
  }
  abort_once();
  throw RuntimeFailure(message + "; the communicator was aborted");
}

void NcclTransport::expire(const char* what, std::chrono::milliseconds waited) {
  abort_once();
  throw DeadlineExceeded(std::string("NCCL ") + what + " on " + where() +
                         " did not complete within its deadline of " + format_duration(timeout_) +
                         " (waited " + format_duration(waited) +
                         "): a peer died, froze or never joined; the communicator was aborted");
}

void NcclTransport::begin(const char* what) {
  if (broken_ || comm_ == nullptr) {
    throw RuntimeFailure(std::string("NCCL ") + what + " on " + where() +
                         ": the transport is unusable after an earlier failure");
  }
  // With its own stream the transport cannot see the caller's streams: it waits for the
  // whole device, so buffers written by earlier kernels are complete before NCCL reads them.
  if (own_stream_) RV_CUDA_CHECK(cudaDeviceSynchronize());
}

void NcclTransport::check_enqueue(ncclResult_t result, const char* what) {
  if (result != ncclSuccess && result != ncclInProgress) fail(what, result);
}

// Non-blocking NCCL returns ncclInProgress while it sets a call up (init, connections,
// enqueueing kernels); the communicator's state says when that is done or has failed.
void NcclTransport::wait_enqueued(const char* what, const Deadline& deadline) {
  const Clock::time_point started = Clock::now();
  Backoff backoff = collective_backoff();
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t result = api().comm_get_async_error(comm_, &state);
    if (result != ncclSuccess) fail(what, result);
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) fail(what, state);
    if (deadline.passed()) {
      expire(what, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started));
    }
    backoff.sleep(deadline);
  }
}

// The watchdog of one call: the call is set up, then its kernels finish on the stream,
// all within the transport's deadline; a peer's failure that NCCL notices is an error now.
void NcclTransport::complete(const char* what) {
  const Deadline deadline(timeout_);
  wait_enqueued(what, deadline);
  const cudaError_t recorded = cudaEventRecord(done_, stream_);
  if (recorded != cudaSuccess) {
    abort_once();
    RV_CUDA_CHECK(recorded);
  }
  Backoff backoff = collective_backoff();
  for (;;) {
    const cudaError_t query = cudaEventQuery(done_);
    if (query == cudaSuccess) return;
    if (query != cudaErrorNotReady) {
      abort_once();
      RV_CUDA_CHECK(query);
    }
    ncclResult_t state = ncclSuccess;
    const ncclResult_t result = api().comm_get_async_error(comm_, &state);
    if (result != ncclSuccess) fail(what, result);
    if (state != ncclSuccess && state != ncclInProgress) fail(what, state);
    if (deadline.passed()) expire(what, deadline.elapsed());
    backoff.sleep(deadline);
  }
}

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
  RV_CUDA_CHECK(cudaMemcpyAsync(staging_device_, staging_host_, bytes, cudaMemcpyHostToDevice,
                                stream_));
  check_enqueue(api().all_gather(staging_device_, staging_device_ + bytes, bytes, ncclUint8, comm_,
                                 stream_),
                "all-gather (staged from host memory)");
  wait_enqueued("all-gather (staged from host memory)", Deadline(timeout_));
  RV_CUDA_CHECK(cudaMemcpyAsync(staging_host_ + bytes, staging_device_ + bytes, gathered,
                                cudaMemcpyDeviceToHost, stream_));
  complete("all-gather (staged from host memory)");
  std::memcpy(out, staging_host_ + bytes, gathered);
}

void NcclTransport::exchange(const ExchangePlan& plan) {
  const auto world = static_cast<std::size_t>(world_);
  RV_ENFORCE_EQ(InputError, plan.send_offset.size(), world, "exchange: send offsets per peer");
  RV_ENFORCE_EQ(InputError, plan.send_bytes.size(), world, "exchange: send sizes per peer");
  RV_ENFORCE_EQ(InputError, plan.recv_offset.size(), world, "exchange: receive offsets per peer");
  RV_ENFORCE_EQ(InputError, plan.recv_bytes.size(), world, "exchange: receive sizes per peer");
  RV_ENFORCE_EQ(InputError, plan.send_bytes[rank_], plan.recv_bytes[rank_],
                "exchange: the own slot's send and receive sizes of rank", rank_);
  const cuda_detail::ScopedDevice scope(device_);
  begin("exchange");
  const auto* send = static_cast<const unsigned char*>(plan.send);
  auto* recv = static_cast<unsigned char*>(plan.recv);
  if (plan.send_bytes[rank_] != 0) {  // the own slot: a device copy, in stream order
    RV_CUDA_CHECK(cudaMemcpyAsync(recv + plan.recv_offset[rank_], send + plan.send_offset[rank_],
                                  plan.send_bytes[rank_], cudaMemcpyDeviceToDevice, stream_));
  }
  check_enqueue(api().group_start(), "exchange (ncclGroupStart)");
  for (std::uint32_t peer = 0; peer < world_; ++peer) {
    if (peer == rank_) continue;
    if (plan.send_bytes[peer] != 0) {
      check_enqueue(api().send(send + plan.send_offset[peer], plan.send_bytes[peer], ncclUint8,
                               static_cast<int>(peer), comm_, stream_),
                    "exchange (ncclSend)");
    }
    if (plan.recv_bytes[peer] != 0) {
      check_enqueue(api().recv(recv + plan.recv_offset[peer], plan.recv_bytes[peer], ncclUint8,
                               static_cast<int>(peer), comm_, stream_),
                    "exchange (ncclRecv)");
    }
  }
  check_enqueue(api().group_end(), "exchange (ncclGroupEnd)");
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

}  // namespace

std::unique_ptr<Transport> connect_nccl(const NcclConnectOptions& options) {
  RV_ENFORCE_GE(InputError, options.world, 1u, "an NCCL world needs at least one rank");
  RV_ENFORCE_LT(InputError, options.rank, options.world, "NCCL rank");
  RV_ENFORCE_GE(InputError, options.device, 0, "CUDA device of NCCL rank", options.rank);
  if (options.job_dir.empty()) throw InputError("connect_nccl: no job directory given");
  if (options.timeout.count() <= 0) throw InputError("connect_nccl: the timeout must be positive");
  const NcclLibrary& library = NcclLibrary::load(options.library);
  return std::make_unique<NcclTransport>(library, options);
}

}  // namespace rv
