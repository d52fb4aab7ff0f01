// Case ids (docs/DESIGN.md §3): canonical, self-describing, parseable back. Comma-separated
// key=value pairs in the fixed order contract,op,[coll,][dtype,]w,n,dist,seed,gen, e.g.
//   contract=fixed-order,op=mean,w=4,n=1000003,dist=wide,seed=7,gen=1
//   contract=exact,op=sum,dtype=bf16,w=8,n=4099,dist=special,seed=1,gen=1
//   contract=exact,op=mean,coll=reduce-scatter,w=3,n=1000,dist=normal,seed=1,gen=1
// dtype is absent for f32 and coll for the all-reduce, so every id that predates them keeps
// its text (and its golden line its meaning).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/arena.h"
#include "core/contract.h"

namespace rv {

// Limits that keep every case computable on an ordinary machine: a case id asking for more
// is bad input, refused before anything is allocated.
inline constexpr std::uint32_t kMaxWorld = 4096;                    // exact sums need W ≤ 4096
inline constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 30;  // elements per rank
inline constexpr std::uint64_t kMaxTotalElements = std::uint64_t{1} << 30;  // W × N

struct CaseId {
  Contract contract = Contract::kFixedOrder;
  Op op = Op::kSum;
  std::uint32_t world = 1;
  std::uint64_t count = 0;
  Distribution dist = Distribution::kNormal;
  std::uint64_t seed = 0;
  std::uint32_t gen = kLatestGenerator;
  DType dtype = DType::kF32;
  Collective coll = Collective::kAllReduce;

  ArenaSpec arena() const { return ArenaSpec{gen, dist, seed, dtype}; }
  bool operator==(const CaseId& other) const;
  bool operator!=(const CaseId& other) const { return !(*this == other); }
};

// The canonical text. parse_case_id(format_case_id(c)) == c for every valid c.
std::string format_case_id(const CaseId& id);

// Parses the canonical text only: every key present once, in order, decimal numbers without
// sign or leading zeros, values in range. Throws InputError naming the field otherwise.
CaseId parse_case_id(std::string_view text);

// Throws InputError when a field is out of range (W, N, W × N, generator version).
void validate_case_id(const CaseId& id);

}  // namespace rv
