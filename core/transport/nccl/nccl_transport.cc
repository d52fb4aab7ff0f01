// The NCCL transport's lifecycle: connect_nccl, joining the world (the unique id, init),
// the watchdog every call waits under, failure and abort, finalize. The collectives are in
// nccl_transport_collectives.cc, the class in nccl_transport_detail.h.
#include "core/transport/nccl/nccl_transport.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <memory>
#include <thread>
#include <utility>

#include "core/cuda/cuda_check.h"
#include "core/deadline.h"
#include "core/error.h"
#include "core/transport/nccl/nccl_api.h"
#include "core/transport/nccl/nccl_transport_detail.h"
#include "core/transport/nccl/nccl_unique_id.h"

namespace rv {
namespace nccl_detail {
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

}  // namespace

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
    // The stream started exchanges run on. Highest priority: the fold kernel keeps every
    // multiprocessor busy, and NCCL's few blocks should be the first scheduled as the fold's
    // retire, not wait behind a later fold.
    int least = 0, greatest = 0;
    RV_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    RV_CUDA_CHECK(cudaStreamCreateWithPriority(&exchange_stream_, cudaStreamNonBlocking, greatest));
    RV_CUDA_CHECK(cudaEventCreateWithFlags(&main_ready_, cudaEventDisableTiming));
    RV_CUDA_CHECK(cudaEventCreateWithFlags(&exchange_tail_, cudaEventDisableTiming));
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
  for (cudaEvent_t event : spare_events_) (void)cudaEventDestroy(event);
  spare_events_.clear();
  if (main_ready_ != nullptr) (void)cudaEventDestroy(main_ready_);
  if (exchange_tail_ != nullptr) (void)cudaEventDestroy(exchange_tail_);
  if (exchange_stream_ != nullptr) (void)cudaStreamDestroy(exchange_stream_);
  main_ready_ = nullptr;
  exchange_tail_ = nullptr;
  exchange_stream_ = nullptr;
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

void NcclTransport::check_usable(const char* what) const {
  if (broken_ || comm_ == nullptr) {
    throw RuntimeFailure(std::string("NCCL ") + what + " on " + where() +
                         ": the transport is unusable after an earlier failure");
  }
}

void NcclTransport::begin(const char* what) {
  check_usable(what);
  // With its own stream the transport cannot see the caller's streams: it waits for the
  // whole device, so buffers written by earlier kernels are complete before NCCL reads them.
  if (own_stream_) RV_CUDA_CHECK(cudaDeviceSynchronize());
  // A call made while started exchanges are in flight runs after them on the device, so
  // NCCL's kernels run in the order this rank called, the order every rank calls in. Its
  // own wait (complete) then covers theirs, under its deadline.
  if (started_in_flight_ > 0) {
    RV_CUDA_CHECK(cudaEventRecord(exchange_tail_, exchange_stream_));
    RV_CUDA_CHECK(cudaStreamWaitEvent(stream_, exchange_tail_, 0));
  }
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
  wait_event(done_, what, deadline, collective_backoff());
}

// Never cudaEventSynchronize: a kernel waiting for a dead peer never ends, so the wait polls,
// and NCCL's own view of the peers and the deadline are checked between polls.
void NcclTransport::wait_event(cudaEvent_t event, const char* what, const Deadline& deadline,
                               Backoff backoff) {
  for (;;) {
    const cudaError_t query = cudaEventQuery(event);
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

}  // namespace nccl_detail

std::unique_ptr<Transport> connect_nccl(const NcclConnectOptions& options) {
  RV_ENFORCE_GE(InputError, options.world, 1u, "an NCCL world needs at least one rank");
  RV_ENFORCE_LT(InputError, options.rank, options.world, "NCCL rank");
  RV_ENFORCE_GE(InputError, options.device, 0, "CUDA device of NCCL rank", options.rank);
  if (options.job_dir.empty()) throw InputError("connect_nccl: no job directory given");
  if (options.timeout.count() <= 0) throw InputError("connect_nccl: the timeout must be positive");
  const NcclLibrary& library = NcclLibrary::load(options.library);
  return std::make_unique<nccl_detail::NcclTransport>(library, options);
}

}  // namespace rv
