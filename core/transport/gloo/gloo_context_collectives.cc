// The Gloo transport's library collectives: the library-sum contract's float ring and its
// reduce-scatter, the exact contract's int64 rings (Gloo's own new-style ring allreduce, with
// Gloo's element functions), each after a length agreement unless the caller vouches for the
// count, and max_int over the header round.
#include <gloo/allreduce.h>
#include <gloo/context.h>
#include <gloo/math.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/transport/gloo/gloo_context_transport.h"

namespace rv {
namespace gloo_detail {

std::int64_t GlooContextTransport::max_int(std::int64_t value) {
  std::vector<std::int64_t> all(world_);
  run("max_int", [&](const std::string& where, const Deadline& deadline) {
    small_all_gather(where, &value, all.data(), sizeof value, deadline);
  });
  return *std::max_element(all.begin(), all.end());
}

void GlooContextTransport::agree_on_count(const std::string& where, std::size_t n,
                                          const Deadline& deadline) {
  // A ring allreduce over different lengths would overrun a posted receive, which Gloo
  // answers by terminating the process: agree on the length first.
  const auto count = static_cast<std::uint64_t>(n);
  std::vector<std::uint64_t> counts(world_);
  small_all_gather(where + " (agreeing on the length)", &count, counts.data(), sizeof count,
                   deadline);
  for (std::uint32_t p = 0; p < world_; ++p) {
    if (counts[p] != count) {
      std::ostringstream out;
      out << where << ": ranks disagree on the number of values, nothing was reduced: rank "
          << rank_ << " has " << n << " but rank " << p << " has " << counts[p];
      throw InputError(out.str());
    }
  }
}

void GlooContextTransport::library_sum(float* values, std::size_t n) {
  run("library_sum", [&](const std::string& where, const Deadline& deadline) {
    agree_on_count(where, n, deadline);
    if (n == 0 || world_ == 1) return;
    // Gloo's own element sum: the library-sum contract is the library's arithmetic.
    ring_allreduce(where, values, n, static_cast<ReduceFunction>(&::gloo::sum<float>), deadline);
  });
}

namespace {

// Debian's Gloo (gloo/types.h) has float16::operator!= compare against `rhs.x` converted to
// an int, and operator= assign only when `rhs != *this`: gloo::sum<float16> then keeps the old
// value wherever the new sum's bits equal the binary16 nearest the old bits read as an
// integer. 0x202b (0.00814) + 0x7005 (8232) gives 0x202b: the addition is lost. The live
// gate found it (library-sum FAILED beyond the association bound on wide and cancelling
// data); tests/reducer/library_sum_half_test.cc keeps the proof. Probed here, so a Gloo that
// fixes it is used again. The same binary on every rank: every rank decides alike.
bool gloo_float16_sum_drops_additions() {
  ::gloo::float16 a, b, c;
  a.x = 0x202b;
  b.x = 0x7005;
  c.x = 0x202b;
  ::gloo::sum<::gloo::float16>(&c, &a, &b, 1);
  return c.x != 0x7005;
}

}  // namespace

std::optional<std::string> GlooContextTransport::library_sum_unavailable(DType dtype) const {
  static const bool f16_defective = gloo_float16_sum_drops_additions();  // probed once
  if (dtype == DType::kF16 && f16_defective) {
    return "gloo's float16 sum is defective in this Gloo: gloo::float16's operator= skips the "
           "assignment when the sum's bits equal the binary16 of the old bits read as an "
           "integer (operator!= compares with rhs.x as an int), so additions are lost "
           "(0x202b + 0x7005 gives 0x202b)";
  }
  if (dtype != DType::kBF16) return std::nullopt;
  return "gloo has no library sum of bf16: Debian's Gloo has no bfloat16 type (its only "
         "half-precision sum is gloo::float16, IEEE binary16)";
}

void GlooContextTransport::library_sum_half(void* values, std::size_t n, DType dtype) {
  // Refused on every rank before any byte moves: each rank takes this branch alike.
  // bf16 has no Gloo type. f16 runs even where the probe above finds Gloo's float16 sum
  // defective: `run` skips it then (library_sum_unavailable), the tests show the defect.
  if (dtype != DType::kF16) {
    throw InputError(library_sum_unavailable(dtype).value_or("gloo: library_sum_half is for f16"));
  }
  run("library_sum f16", [&](const std::string& where, const Deadline& deadline) {
    agree_on_count(where, n, deadline);
    if (n == 0 || world_ == 1) return;
    // gloo::float16 is the format's raw 16 bits (alignas(2), one uint16_t member), and its sum
    // widens, adds in float and rounds back per addition: the library's own arithmetic.
    static_assert(sizeof(::gloo::float16) == 2, "gloo::float16 is binary16's two bytes");
    ring_allreduce(where, static_cast<::gloo::float16*>(values), n,
                   static_cast<ReduceFunction>(&::gloo::sum<::gloo::float16>), deadline);
  });
}

std::optional<std::string> GlooContextTransport::library_reduce_scatter_unavailable(
    DType dtype) const {
  if (dtype == DType::kF32) return std::nullopt;
  return "gloo's reduce-scatter is run on binary32 only here: Debian's Gloo has no bfloat16, "
         "and its float16 sum drops additions (see library_sum_unavailable)";
}

void GlooContextTransport::library_reduce_scatter(void* values, std::size_t shard_size,
                                                  DType dtype) {
  if (auto reason = library_reduce_scatter_unavailable(dtype)) throw InputError(*reason);
  // What torch's ProcessGroupGloo runs for reduce_scatter: Gloo's ring allreduce of the whole
  // buffer, of which each rank keeps its shard (Gloo's own association order). Debian's Gloo
  // has a reduce-scatter algorithm too, ReduceScatterHalvingDoubling, but only old-style:
  // bound buffers, which shrink the sockets' send buffers and slow every later transfer on the
  // pairs (gloo_transport.h), so it is not used.
  library_sum(static_cast<float*>(values), shard_size * world_);
}

void GlooContextTransport::all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) {
  int64_all_reduce(values, n, op, false);
}

void GlooContextTransport::all_reduce_int64_counts_agreed(std::int64_t* values, std::size_t n,
                                                          IntReduction op) {
  int64_all_reduce(values, n, op, true);
}

void GlooContextTransport::int64_all_reduce(std::int64_t* values, std::size_t n, IntReduction op,
                                            bool counts_agreed) {
  const char* name = op == IntReduction::kSum ? "int64 sum" : "int64 max";
  run(name, [&](const std::string& where, const Deadline& deadline) {
    // The count round is one more full-mesh exchange of headers before the ring.
    if (!counts_agreed) agree_on_count(where, n, deadline);
    if (n == 0 || world_ == 1) return;
    const auto reduce = op == IntReduction::kSum
                            ? static_cast<ReduceFunction>(&::gloo::sum<std::int64_t>)
                            : static_cast<ReduceFunction>(&::gloo::max<std::int64_t>);
    ring_allreduce(where, values, n, reduce, deadline);
  });
}

template <typename T>
void GlooContextTransport::ring_allreduce(const std::string& where, T* values, std::size_t n,
                                          ReduceFunction reduce, const Deadline& deadline) {
  ::gloo::AllreduceOptions options(context_);
  options.setAlgorithm(::gloo::AllreduceOptions::Algorithm::RING);
  options.setOutput(values, n);
  options.setReduceFunction(reduce);
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
