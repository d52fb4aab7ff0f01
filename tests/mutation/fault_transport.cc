#include "tests/mutation/fault_transport.h"

#include <algorithm>
#include <cstring>

#include "core/shard_plan.h"

namespace rv::test {

std::string to_string(Mutant mutant) {
  switch (mutant) {
    case Mutant::kDrop:
      return "drop";
    case Mutant::kDuplicate:
      return "duplicate";
    case Mutant::kStale:
      return "stale";
    case Mutant::kSwap:
      return "swap";
    case Mutant::kFlipBit:
      return "flip-bit";
    case Mutant::kTruncate:
      return "truncate";
    case Mutant::kReorder:
      return "reorder";
  }
  return "?";
}

bool is_corruption(Mutant mutant) { return mutant != Mutant::kSwap && mutant != Mutant::kReorder; }

std::string to_string(Site site) {
  switch (site) {
    case Site::kAgreement:
      return "agreement";
    case Site::kScatter:
      return "scatter";
    case Site::kDistribute:
      return "distribute";
    case Site::kWindowMax:
      return "window max";
    case Site::kDigitSum:
      return "digit sum";
    case Site::kLibrarySum:
      return "library sum";
  }
  return "?";
}

std::string operation_of(Site site) {
  switch (site) {
    case Site::kAgreement:
      return "all_gather";
    case Site::kScatter:
    case Site::kDistribute:
      return "exchange";
    case Site::kWindowMax:
    case Site::kDigitSum:
      return "all_reduce_int64";
    case Site::kLibrarySum:
      return "library_sum";
  }
  return "?";
}

namespace {

// Which call of its operation a site is, counting from 0 within a span.
int call_index(Site site) { return site == Site::kDistribute || site == Site::kDigitSum ? 1 : 0; }

}  // namespace

FaultyTransport::FaultyTransport(Transport& inner, const FaultPlan& plan, FaultMemory& memory)
    : inner_(inner), plan_(plan), memory_(memory) {}

void FaultyTransport::begin_span(bool mutate) {
  mutate_ = mutate;
  calls_.clear();
  hit_ = FaultHit{};
}

bool FaultyTransport::at_site(const std::string& operation) {
  const int index = calls_[operation]++;
  if (operation != operation_of(plan_.site) || index != call_index(plan_.site)) return false;
  hit_.reached = true;
  return true;
}

std::string FaultyTransport::apply(unsigned char* now, const unsigned char* before,
                                   const std::vector<unsigned char>& stale,
                                   const std::vector<Piece>& pieces, std::size_t element,
                                   bool chunks) const {
  if (pieces.empty()) return "";
  const auto name = [chunks](const Piece& p) {
    return (chunks ? "chunk " : "peer ") + std::to_string(p.peer) + (chunks ? "" : "'s block") +
           " (" + std::to_string(p.bytes) + " bytes)";
  };
  const auto copy_prefix = [now](const Piece& to, const unsigned char* from_base,
                                 const Piece& from) {
    std::memmove(now + to.offset, from_base + from.offset, std::min(to.bytes, from.bytes));
  };
  // Pieces that crossed the wire: a peer's block, not the victim's own local copy (every
  // chunk of a contribution).
  std::vector<std::size_t> wire;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    if (chunks || pieces[k].peer != plan_.victim) wire.push_back(k);
  }
  if (wire.empty()) return "";
  // The mutant's piece: the first from the wire. A second one: the last piece other than it
  // (the first two slots of a fold commute, so a swap of exactly those is no fault at all).
  const std::size_t a = wire.front();
  const std::size_t b = pieces.size() - 1 != a ? pieces.size() - 1 : (a == 0 ? a : a - 1);
  const bool two = b != a;
  const Piece& pa = pieces[a];
  switch (plan_.mutant) {
    case Mutant::kDrop:
      std::memcpy(now + pa.offset, before + pa.offset, pa.bytes);
      return name(pa) + " dropped";
    case Mutant::kDuplicate:
      if (!two) return "";
      copy_prefix(pieces[b], now, pa);
      return name(pa) + " also landed in the place of " + name(pieces[b]);
    case Mutant::kStale: {
      const std::size_t end = std::min(pa.offset + pa.bytes, stale.size());
      if (end <= pa.offset) return "";
      std::memcpy(now + pa.offset, stale.data() + pa.offset, end - pa.offset);
      return name(pa) + " from the previous span";
    }
    case Mutant::kSwap: {
      if (!two) return "";
      const Piece& pb = pieces[b];
      const std::size_t bytes = std::min(pa.bytes, pb.bytes);
      std::vector<unsigned char> keep(now + pa.offset, now + pa.offset + bytes);
      std::memmove(now + pa.offset, now + pb.offset, bytes);
      std::memcpy(now + pb.offset, keep.data(), bytes);
      return name(pa) + " and " + name(pb) + " swapped";
    }
    case Mutant::kFlipBit: {
      if (pa.bytes < element) return "";
      // Element 0's second-highest bit: the exponent's top bit of a binary32, bit 62 of an
      // int64 (the sign bit would leave a zero a zero).
      const std::size_t bit = 8 * element - 2;
      now[pa.offset + bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
      return "bit " + std::to_string(bit) + " of element 0 of " + name(pa) + " flipped";
    }
    case Mutant::kTruncate: {
      const Piece& last = pieces[wire.back()];
      const std::size_t kept = last.bytes / 2;
      std::memcpy(now + last.offset + kept, before + last.offset + kept, last.bytes - kept);
      return name(last) + " cut to " + std::to_string(kept) + " bytes";
    }
    case Mutant::kReorder: {
      if (pieces.size() < 2) return "";
      const std::vector<unsigned char> right(now, now + pieces.back().offset + pieces.back().bytes);
      for (std::size_t k = 0; k < pieces.size(); ++k) {
        copy_prefix(pieces[(k + 1) % pieces.size()], right.data(), pieces[k]);
      }
      return std::to_string(pieces.size()) + (chunks ? " chunks" : " blocks") +
             " rotated by one place";
    }
  }
  return "";
}

void FaultyTransport::on_receive(const std::function<void()>& call, unsigned char* base,
                                 std::size_t bytes, const std::vector<Piece>& pieces) {
  const std::vector<unsigned char> before(base, base + bytes);
  call();
  std::vector<unsigned char> right(base, base + bytes);
  std::vector<unsigned char> stale = std::move(memory_.last[plan_.site]);
  memory_.last[plan_.site] = right;
  if (!mutate_ || rank() != plan_.victim) return;
  const std::string what = apply(base, before.data(), stale, pieces, 4, /*chunks=*/false);
  if (what.empty()) return;
  hit_.fired = true;
  hit_.changed = std::memcmp(base, right.data(), bytes) != 0;
  hit_.what = "rank " + std::to_string(rank()) + " " + operation_of(plan_.site) + ": " + what;
}

void FaultyTransport::on_contribute(const std::function<void(unsigned char*)>& call,
                                    unsigned char* base, std::size_t bytes,
                                    const std::vector<Piece>& pieces, std::size_t element) {
  std::vector<unsigned char> stale = std::move(memory_.last[plan_.site]);
  memory_.last[plan_.site].assign(base, base + bytes);
  if (!mutate_) {
    call(base);
    return;
  }
  // Every rank reduces the right contributions once more on a copy, so each can tell whether
  // the corrupted one changed what the library returns (a larger max may change nothing).
  std::vector<unsigned char> right = memory_.last[plan_.site];
  call(right.data());
  if (rank() == plan_.victim) {
    // A contribution that never lands adds nothing: zeros.
    const std::vector<unsigned char> never(bytes, 0);
    const std::string what = apply(base, never.data(), stale, pieces, element, /*chunks=*/true);
    if (!what.empty()) {
      hit_.fired = true;
      hit_.what = "rank " + std::to_string(rank()) + "'s contribution to " +
                  operation_of(plan_.site) + ": " + what;
    }
  }
  call(base);
  hit_.changed = std::memcmp(base, right.data(), bytes) != 0;
}

std::vector<FaultyTransport::Piece> FaultyTransport::chunks_of(std::size_t n,
                                                               std::size_t element) const {
  std::vector<Piece> pieces;
  const std::vector<Shard> plan = shard_plan(n, world_size());
  for (std::uint32_t p = 0; p < plan.size(); ++p) {
    if (plan[p].count != 0) pieces.push_back({p, plan[p].begin * element, plan[p].count * element});
  }
  return pieces;
}

void FaultyTransport::all_gather(const void* in, void* out, std::size_t bytes) {
  if (!at_site("all_gather")) {
    inner_.all_gather(in, out, bytes);
    return;
  }
  std::vector<Piece> pieces;
  for (std::uint32_t p = 0; p < world_size() && bytes != 0; ++p)
    pieces.push_back({p, p * bytes, bytes});
  on_receive([&] { inner_.all_gather(in, out, bytes); }, static_cast<unsigned char*>(out),
             world_size() * bytes, pieces);
}

void FaultyTransport::exchange(const ExchangePlan& plan) {
  if (!at_site("exchange")) {
    inner_.exchange(plan);
    return;
  }
  std::vector<Piece> pieces;
  std::size_t end = 0;
  for (std::uint32_t p = 0; p < world_size(); ++p) {
    if (plan.recv_bytes[p] == 0) continue;
    pieces.push_back({p, plan.recv_offset[p], plan.recv_bytes[p]});
    end = std::max(end, plan.recv_offset[p] + plan.recv_bytes[p]);
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& x, const Piece& y) { return x.offset < y.offset; });
  on_receive([&] { inner_.exchange(plan); }, static_cast<unsigned char*>(plan.recv), end, pieces);
}

void FaultyTransport::library_sum(float* values, std::size_t n) {
  if (!at_site("library_sum")) {
    inner_.library_sum(values, n);
    return;
  }
  const std::vector<Piece> pieces = chunks_of(n, sizeof(float));
  on_contribute(
      [&](unsigned char* buffer) { inner_.library_sum(reinterpret_cast<float*>(buffer), n); },
      reinterpret_cast<unsigned char*>(values), n * sizeof(float), pieces, sizeof(float));
}

void FaultyTransport::all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) {
  if (!at_site("all_reduce_int64")) {
    inner_.all_reduce_int64(values, n, op);
    return;
  }
  const std::vector<Piece> pieces = chunks_of(n, sizeof(std::int64_t));
  on_contribute(
      [&](unsigned char* buffer) {
        inner_.all_reduce_int64(reinterpret_cast<std::int64_t*>(buffer), n, op);
      },
      reinterpret_cast<unsigned char*>(values), n * sizeof(std::int64_t), pieces,
      sizeof(std::int64_t));
}

}  // namespace rv::test
