#include "core/transport/gloo/gloo_context_transport.h"

#include <gloo/allreduce.h>
#include <gloo/context.h>
#include <gloo/math.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/transport/gloo/gloo_transport.h"
#include "core/transport/gloo/peer_transfers.h"
#include "core/transport/gloo/size_agreement.h"

namespace rv {
namespace gloo_detail {
namespace {

const char* byte_ptr(const void* p, std::size_t offset) {
  return static_cast<const char*>(p) + offset;
}
char* byte_ptr(void* p, std::size_t offset) { return static_cast<char*>(p) + offset; }

void check_plan_shape(const ExchangePlan& plan, std::uint32_t world) {
  const auto w = static_cast<std::size_t>(world);
  RV_ENFORCE_EQ(InputError, plan.send_offset.size(), w, "exchange plan: one send offset per rank");
  RV_ENFORCE_EQ(InputError, plan.send_bytes.size(), w, "exchange plan: one send count per rank");
  RV_ENFORCE_EQ(InputError, plan.recv_offset.size(), w, "exchange plan: one recv offset per rank");
  RV_ENFORCE_EQ(InputError, plan.recv_bytes.size(), w, "exchange plan: one recv count per rank");
  for (std::size_t p = 0; p < w; ++p) {
    if (plan.send_bytes[p] > 0 && plan.send == nullptr) {
      throw InputError("exchange plan: bytes to send to rank " + std::to_string(p) +
                       " but no send buffer");
    }
    if (plan.recv_bytes[p] > 0 && plan.recv == nullptr) {
      throw InputError("exchange plan: bytes to receive from rank " + std::to_string(p) +
                       " but no receive buffer");
    }
  }
}

// Every rank's `bytes` from `in` into out + rank × bytes.
ExchangePlan all_gather_plan(const void* in, void* out, std::size_t bytes, std::uint32_t world) {
  ExchangePlan plan;
  plan.send = in;
  plan.recv = out;
  plan.send_offset.assign(world, 0);
  plan.send_bytes.assign(world, bytes);
  plan.recv_bytes.assign(world, bytes);
  for (std::uint32_t p = 0; p < world; ++p) plan.recv_offset.push_back(p * bytes);
  return plan;
}

}  // namespace

GlooContextTransport::GlooContextTransport(std::shared_ptr<::gloo::Context> context,
                                           std::chrono::milliseconds timeout)
    : context_(std::move(context)),
      rank_(static_cast<std::uint32_t>(context_->rank)),
      world_(static_cast<std::uint32_t>(context_->size)),
      timeout_(timeout) {}

// The context closes its pairs (an orderly close: bytes already written still arrive) and
// joins the device's I/O thread.
GlooContextTransport::~GlooContextTransport() = default;

std::string GlooContextTransport::library_version() const { return gloo_library_version(); }

std::string GlooContextTransport::label(const char* op) const {
  std::ostringstream out;
  out << "gloo " << op << " on rank " << rank_ << " of " << world_;
  return out.str();
}

template <typename Body>
void GlooContextTransport::run(const char* op, Body body) {
  const std::string where = label(op);
  if (!failure_.empty()) {
    throw RuntimeFailure(where +
                         ": the transport is unusable after an earlier failure: " + failure_);
  }
  const Deadline deadline(timeout_);
  try {
    body(where, deadline);
  } catch (const Error& e) {
    failure_ = e.what();
    throw;
  } catch (...) {
    failure_ = where + ": " + current_exception_text();
    throw RuntimeFailure(failure_);
  }
}

bool GlooContextTransport::agree_on_counts(const std::string& where, const ExchangePlan& plan,
                                           const Deadline& deadline) {
  const std::size_t row_length = 2 * static_cast<std::size_t>(world_);
  const std::size_t row_bytes = row_length * sizeof(std::uint64_t);
  const std::vector<std::uint64_t> mine = size_row(plan.send_bytes, plan.recv_bytes);
  std::vector<std::uint64_t> rows(world_ * row_length);
  std::copy(mine.begin(), mine.end(), rows.begin() + rank_ * row_length);
  std::vector<PeerBytes> peers(world_);
  for (std::uint32_t p = 0; p < world_; ++p) {
    if (p != rank_) peers[p] = PeerBytes{mine.data(), row_bytes, &rows[p * row_length], row_bytes};
  }
  if (world_ > 1) {
    transfer_with_peers(*context_, where + " (agreeing on byte counts)", peers, deadline);
  }
  const std::string disagreement = find_size_disagreement(rows, world_);
  if (!disagreement.empty()) {
    throw InputError(where + ": ranks disagree on byte counts, nothing was sent: " + disagreement);
  }
  for (std::uint32_t from = 0; from < world_; ++from) {
    for (std::uint32_t to = 0; to < world_; ++to) {
      if (from != to && rows[from * row_length + to] > 0) return true;
    }
  }
  return false;
}

void GlooContextTransport::checked_exchange(const std::string& where, const ExchangePlan& plan,
                                            const Deadline& deadline) {
  check_plan_shape(plan, world_);
  // Every rank holds the same table, so all of them skip the payload round or none does; a
  // caller that promises agreed counts promises it on every rank, and no rank skips.
  const bool any_payload = plan.counts_agreed || agree_on_counts(where, plan, deadline);
  if (plan.send_bytes[rank_] > 0) {
    std::memmove(byte_ptr(plan.recv, plan.recv_offset[rank_]),
                 byte_ptr(plan.send, plan.send_offset[rank_]), plan.send_bytes[rank_]);
  }
  if (!any_payload || world_ == 1) return;
  std::vector<PeerBytes> peers(world_);
  for (std::uint32_t p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    peers[p] = PeerBytes{byte_ptr(plan.send, plan.send_offset[p]), plan.send_bytes[p],
                         byte_ptr(plan.recv, plan.recv_offset[p]), plan.recv_bytes[p]};
  }
  transfer_with_peers(*context_, where, peers, deadline);
}

void GlooContextTransport::all_gather(const void* in, void* out, std::size_t bytes) {
  run("all_gather", [&](const std::string& where, const Deadline& deadline) {
    checked_exchange(where, all_gather_plan(in, out, bytes, world_), deadline);
  });
}

void GlooContextTransport::exchange(const ExchangePlan& plan) {
  run("exchange", [&](const std::string& where, const Deadline& deadline) {
    checked_exchange(where, plan, deadline);
  });
}

void GlooContextTransport::broadcast(void* buf, std::size_t bytes, std::uint32_t root) {
  run("broadcast", [&](const std::string& where, const Deadline& deadline) {
    RV_ENFORCE_LT(InputError, root, world_, where + ": broadcast root out of range");
    // A star from the root: every receiver waits on the root itself, so a failure names it.
    ExchangePlan plan;
    plan.send = buf;
    plan.recv = buf;
    plan.send_offset.assign(world_, 0);
    plan.recv_offset.assign(world_, 0);
    plan.send_bytes.assign(world_, 0);
    plan.recv_bytes.assign(world_, 0);
    if (rank_ == root) {
      for (std::uint32_t p = 0; p < world_; ++p) {
        if (p != root) plan.send_bytes[p] = bytes;
      }
    } else {
      plan.recv_bytes[root] = bytes;
    }
    checked_exchange(where, plan, deadline);
  });
}

void GlooContextTransport::barrier() {
  // The byte-count round alone is a barrier: no rank leaves it before it has heard from
  // every other rank.
  run("barrier", [&](const std::string& where, const Deadline& deadline) {
    ExchangePlan plan;
    plan.send_offset.assign(world_, 0);
    plan.send_bytes.assign(world_, 0);
    plan.recv_offset.assign(world_, 0);
    plan.recv_bytes.assign(world_, 0);
    checked_exchange(where, plan, deadline);
  });
}

std::int64_t GlooContextTransport::max_int(std::int64_t value) {
  std::vector<std::int64_t> all(world_);
  run("max_int", [&](const std::string& where, const Deadline& deadline) {
    checked_exchange(where, all_gather_plan(&value, all.data(), sizeof value, world_), deadline);
  });
  return *std::max_element(all.begin(), all.end());
}

void GlooContextTransport::library_sum(float* values, std::size_t n) {
  run("library_sum", [&](const std::string& where, const Deadline& deadline) {
    // A ring allreduce over different lengths would overrun a posted receive, which Gloo
    // answers by terminating the process: agree on the length first.
    const auto count = static_cast<std::uint64_t>(n);
    std::vector<std::uint64_t> counts(world_);
    checked_exchange(where + " (agreeing on the length)",
                     all_gather_plan(&count, counts.data(), sizeof count, world_), deadline);
    for (std::uint32_t p = 0; p < world_; ++p) {
      if (counts[p] != count) {
        std::ostringstream out;
        out << where << ": ranks disagree on the number of values, nothing was summed: rank "
            << rank_ << " has " << count << " but rank " << p << " has " << counts[p];
        throw InputError(out.str());
      }
    }
    if (n == 0 || world_ == 1) return;
    ring_allreduce(where, values, n, deadline);
  });
}

void GlooContextTransport::ring_allreduce(const std::string& where, float* values, std::size_t n,
                                          const Deadline& deadline) {
  ::gloo::AllreduceOptions options(context_);
  options.setAlgorithm(::gloo::AllreduceOptions::Algorithm::RING);
  options.setOutput(values, n);
  // Gloo's own element sum: the library-sum contract is the library's arithmetic.
  options.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&::gloo::sum<float>));
  // Every call a fresh tag, the same on every rank (calls are collective).
  options.setTag(allreduce_tag_++);
  const auto remaining = deadline.remaining();
  options.setTimeout(remaining.count() > 0 ? remaining : std::chrono::milliseconds(1));
  try {
    ::gloo::allreduce(options);
  } catch (...) {
    const std::string text = current_exception_text();
    // Gloo's ring receives from rank + 1 and sends to rank − 1; a stall anywhere in the ring
    // reaches every rank, so the culprit cannot be told from here.
    std::ostringstream out;
    out << where << ": Gloo's ring allreduce (receiving from rank " << (rank_ + 1) % world_
        << ", sending to rank " << (rank_ + world_ - 1) % world_ << ") ";
    if (deadline.passed() || text.find("Timed out") != std::string::npos) {
      out << "did not finish within " << format_duration(deadline.timeout())
          << " (a rank in the ring is dead or frozen?): " << text;
      throw DeadlineExceeded(out.str());
    }
    out << "failed: " << text;
    throw RuntimeFailure(out.str());
  }
}

}  // namespace gloo_detail
}  // namespace rv
