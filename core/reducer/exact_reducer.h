// The exact reducer (docs/DESIGN.md §2, §5): the correctly rounded sum, by one of two
// dataflows that give the same bits (the result depends on the W addends alone):
// - owners: the fixed-order dataflow (owner_scatter.h). Every rank sends its copy of shard p
//   to owner p, each owner reduces its stacked table exactly (ExactDevice::reduce_stacked)
//   and sends the results back: 4-byte addends and results on the wire, as a float ring's.
// - digits: through the library's own integer all-reduce. Every rank computes its blocks'
//   agreement words; one int64 max all-reduce agrees the windows; every rank writes its
//   digits; one int64 sum all-reduce per piece adds them (any algorithm the library picks:
//   integer sums are associative); every rank rounds the same sums to the same floats. No
//   float addition happens in the library; 8 bytes an element or more go through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/contract.h"
#include "core/dtype.h"
#include "core/reducer/exact_device.h"
#include "core/reducer/growing_scratch.h"
#include "core/shard_plan.h"
#include "core/transport/transport.h"

namespace rv {

enum class ExactDataflow { kOwners, kDigits };

struct ExactOptions {
  // Digits: elements per sum round (a multiple of exact::kBlock; 0 = the whole arena at once).
  // for_device: 16 Mi on the host and on a GPU (large messages; scratch bounded).
  std::size_t piece_elements = 0;
  // Owners and the reduce-scatter: each owner's tables (W slots of a piece of its shard), at
  // most this many bytes each; 0 = the whole shard at once. for_device: 16 MiB, the
  // fixed-order host fold's table (the stacked reduction streams its W slots as that fold
  // does).
  std::size_t scatter_table_bytes = 0;
  // for_device: owners on the host (half the digits' bytes; their cost over Gloo is in
  // docs/results.md, "Transports"), digits on a GPU (the dataflow measured there; which is
  // faster over NCCL at W ≥ 2 is not known yet).
  ExactDataflow dataflow = ExactDataflow::kDigits;
  static ExactOptions for_device(const ExactDevice& device);
};

// What the last all_reduce handed the library, per rank: int64 words to its all-reduces
// (digits) or floats sent to other ranks (owners).
struct ExactTraffic {
  std::size_t agreement_words = 0;
  std::size_t sum_words = 0;
  std::size_t sent_floats = 0;
  std::size_t elements = 0;
  double bytes_per_element() const {
    return elements == 0 ? 0.0
                         : (8.0 * static_cast<double>(agreement_words + sum_words) +
                            4.0 * static_cast<double>(sent_floats)) /
                               static_cast<double>(elements);
  }
};

class ExactReducer {
 public:
  // Scratch is allocated on `device` at the first call and reused (grown when needed). Both
  // references must outlive the reducer.
  ExactReducer(Transport& transport, ExactDevice& device);
  ExactReducer(Transport& transport, ExactDevice& device, const ExactOptions& options);
  ~ExactReducer();
  ExactReducer(const ExactReducer&) = delete;
  ExactReducer& operator=(const ExactReducer&) = delete;

  // In place over the n floats of `arena` (in the device's memory); afterwards every rank
  // holds identical bits: the exact contract's. Collective: every rank calls it with the
  // same op. The ranks agree on n first: a rank with another length is an InputError on every
  // rank naming who has what. W ≤ 2^20. The options' dataflow decides what moves; the bits
  // are the same.
  // bf16/f16 (docs/DESIGN.md §2.5): the arena holds the dtype's values widened, the digits
  // are theirs (as for f32: the same words per element), and the results are rounded once
  // to the dtype, widened.
  void all_reduce(float* arena, std::size_t n, Op op, DType dtype = DType::kF32);

  // The reduce-scatter (docs/DESIGN.md §2.6), the same call as
  // FixedOrderReducer::reduce_scatter: rank p's shard of padded_shard_plan(n, W, shard_size)
  // into out (exactly out_count = that shard's length), every element with the bits
  // all_reduce gives at that index. The exact result depends on the addends alone, not on how
  // the arena is partitioned, so the owners receive the addends themselves (4 bytes an
  // element, (W − 1)/W of the arena sent per rank) and reduce their stacked table
  // (ExactDevice::reduce_stacked); no digits and no agreement words travel. The device must
  // have reduce_stacked (the host does).
  void reduce_scatter(const float* arena, std::size_t n, float* out, std::size_t out_count, Op op,
                      DType dtype = DType::kF32,
                      std::optional<std::size_t> shard_size = std::nullopt);

  // What the last all_reduce moved (reduce_scatter leaves it as it was).
  const ExactTraffic& last_traffic() const { return traffic_; }

 private:
  void all_reduce_through_owners(float* arena, std::size_t n, Op op, DType dtype);
  void all_reduce_through_digits(float* arena, std::size_t n, Op op, DType dtype);
  // The owner dataflow's first half over `plan` (owner_scatter.h): this rank's shard reduced
  // exactly, rounded to dtype, into out (piece by piece); done(k, pieces), if given, runs
  // after piece k is reduced.
  void reduce_own_shard(const float* arena, const std::vector<Shard>& plan, float* out, Op op,
                        DType dtype, const std::function<void(std::size_t, std::size_t)>& done);

  Transport& transport_;
  ExactDevice& device_;
  ExactOptions options_;
  GrowingScratch<std::int64_t> words_;  // agreement words and digits
  GrowingScratch<float> values_;        // the owners' stacked tables
  std::vector<std::int64_t> agreed_;
  ExactTraffic traffic_;
};

}  // namespace rv
