#include "core/reducer/agreement.h"

#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/reducer/agreement_record.h"

namespace rv {
namespace {

// "ranks 0, 1, 3" or "rank 2"
std::string rank_list(const std::vector<std::uint32_t>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

}  // namespace

void agree_across_ranks(Transport& transport, const std::string& what) {
  const std::uint32_t world = transport.world_size();
  const auto mine = AgreementRecord::of(what).encode();
  std::vector<unsigned char> all(world * AgreementRecord::kBytes);
  transport.all_gather(mine.data(), all.data(), AgreementRecord::kBytes);
  // A record no rank could have encoded was changed on the way: the transport is at fault,
  // not the ranks' inputs.
  for (std::uint32_t r = 0; r < world; ++r) {
    if (!AgreementRecord::intact(&all[r * AgreementRecord::kBytes])) {
      throw RuntimeFailure("rank " + std::to_string(transport.rank()) +
                           ": the agreement record from rank " + std::to_string(r) +
                           " arrived corrupted (its bytes are no encoded record): " +
                           transport.name() + " delivered wrong bytes");
    }
  }

  // Group the ranks by record, in order of first appearance (rank 0's group first).
  std::vector<AgreementRecord> distinct;
  std::vector<std::vector<std::uint32_t>> holders;
  for (std::uint32_t r = 0; r < world; ++r) {
    const AgreementRecord record = AgreementRecord::decode(&all[r * AgreementRecord::kBytes]);
    std::size_t g = 0;
    while (g < distinct.size() && distinct[g] != record) ++g;
    if (g == distinct.size()) {
      distinct.push_back(record);
      holders.emplace_back();
    }
    holders[g].push_back(r);
  }
  if (distinct.size() == 1) return;

  std::ostringstream out;
  out << "ranks disagree before moving any bytes: ";
  for (std::size_t g = 0; g < distinct.size(); ++g) {
    out << (g == 0   ? ""
            : g == 1 ? " but "
                     : "; ")
        << rank_list(holders[g]) << (holders[g].size() == 1 ? " has " : " have ")
        << distinct[g].display();
  }
  throw InputError(out.str());
}

}  // namespace rv
