// The NCCL transport's started exchanges (Transport::start_exchange): the fixed-order reducer
// folds piece k on the caller's stream while the copies of piece k + 1 move, and the reduced
// piece k leaves while piece k + 1 is folded.
//
// Streams: an exchange is enqueued on the transport's exchange stream, which first waits for
// everything already on the main stream (the fold that wrote the bytes it sends, the fold that
// last read the table it receives into). Its completion is an event; wait() polls that event
// under the transport's watchdog (wait_event: NCCL's error state and the deadline between
// polls), then makes the main stream wait for it, so work the caller enqueues afterwards sees
// the bytes. A call on the main stream made while exchanges are in flight runs after them
// (begin), so NCCL's kernels always run in the order this rank called them.
#include <chrono>
#include <memory>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/deadline.h"
#include "core/error.h"
#include "core/transport/nccl/nccl_transport_detail.h"

namespace rv::nccl_detail {
namespace {

constexpr const char* kStarted = "exchange (started)";

// A started exchange is one piece (a table of at most FixedOrderOptions::piece_table_bytes):
// it lands within a millisecond or so, and the caller waits for it once per piece, so the
// polls stay fine-grained. The collectives' 1 ms cap could add up to a piece's own time.
Backoff started_backoff() {
  return Backoff(std::chrono::microseconds(5), std::chrono::microseconds(50));
}

}  // namespace

class NcclTransport::Pending final : public PendingExchange {
 public:
  // Counts itself in flight from construction, so an exception between here and the end of
  // start_exchange abandons the half-enqueued exchange like any other unwaited one.
  Pending(NcclTransport& owner, cudaEvent_t landed) : owner_(owner), landed_(landed) {
    ++owner_.started_in_flight_;
  }
  ~Pending() override {
    if (!waited_) owner_.abandon_started(landed_);
  }
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;

  cudaEvent_t landed() const { return landed_; }

  void wait() override {
    if (waited_) {
      throw InternalError("NCCL " + std::string(kStarted) + " on " + owner_.where() +
                          ": waited for twice");
    }
    waited_ = true;
    owner_.finish_started(landed_);
  }

 private:
  NcclTransport& owner_;
  cudaEvent_t landed_;
  bool waited_ = false;
};

std::unique_ptr<PendingExchange> NcclTransport::start_exchange(const ExchangePlan& plan) {
  // Without counts_agreed the counts are checked first, a round of its own that must block;
  // without the caller's stream the transport cannot order an exchange after the caller's
  // work except by synchronising the whole device, which would also wait, with no deadline,
  // for exchanges already in flight. Both run as exchange does.
  if (!plan.counts_agreed || exchange_stream_ == nullptr) return Transport::start_exchange(plan);
  check_plan_shape(plan);
  const cuda_detail::ScopedDevice scope(device_);
  check_usable(kStarted);
  RV_CUDA_CHECK(cudaEventRecord(main_ready_, stream_));
  RV_CUDA_CHECK(cudaStreamWaitEvent(exchange_stream_, main_ready_, 0));
  auto pending = std::make_unique<Pending>(*this, take_spare_event());
  enqueue_exchange(plan, exchange_stream_);
  // Non-blocking NCCL may still be enqueueing its kernel: the event must come after it.
  wait_enqueued(kStarted, Deadline(timeout_));
  RV_CUDA_CHECK(cudaEventRecord(pending->landed(), exchange_stream_));
  return pending;
}

// Each wait has the transport's whole timeout from when it starts: the exchanges in flight
// run one after the other on the exchange stream, so one started early may rightly still be
// queued behind the others when the caller gets to it.
void NcclTransport::finish_started(cudaEvent_t landed) {
  --started_in_flight_;
  const cuda_detail::ScopedDevice scope(device_);
  try {
    check_usable(kStarted);
    wait_event(landed, kStarted, Deadline(timeout_), started_backoff());
    RV_CUDA_CHECK(cudaStreamWaitEvent(stream_, landed, 0));
  } catch (...) {
    return_spare_event(landed);
    throw;
  }
  return_spare_event(landed);
}

// The caller is unwinding and about to reuse or free the buffers these bytes are still landing
// in: the communicator is aborted, which stops NCCL's kernels, and the transport is unusable.
// The peers' waits then end in their own named errors.
void NcclTransport::abandon_started(cudaEvent_t landed) noexcept {
  --started_in_flight_;
  abort_once();
  broken_ = true;
  return_spare_event(landed);
}

cudaEvent_t NcclTransport::take_spare_event() {
  if (!spare_events_.empty()) {
    cudaEvent_t event = spare_events_.back();
    spare_events_.pop_back();
    return event;
  }
  cudaEvent_t event = nullptr;
  RV_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

void NcclTransport::return_spare_event(cudaEvent_t event) noexcept {
  if (abort_hung_) return;  // NCCL's kernels may still be running before it: leak it
  try {
    spare_events_.push_back(event);
  } catch (...) {
    (void)cudaEventDestroy(event);
  }
}

}  // namespace rv::nccl_detail
