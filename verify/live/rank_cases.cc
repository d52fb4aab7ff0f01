#include "verify/live/rank_cases.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/fold_law.h"
#include "core/oracle/case_reduction.h"
#include "core/reducer/agreement.h"
#include "core/reducer/library_sum_reducer.h"
#include "core/shard_plan.h"
#include "verify/golden/accuracy.h"
#include "verify/live/library_sum_check.h"

namespace rv {

RankReducers::RankReducers(Transport& transport, FixedOrderDevice& device,
                           ExactDevice* exact_device, const RankReducerOptions& options)
    : transport_(transport),
      device_(device),
      exact_device_(exact_device),
      options_(options),
      fixed_order_(transport, device,
                   options.fixed_order.value_or(FixedOrderOptions::for_device(device))),
      buffer_([&device](std::size_t n) { return device.allocate(n); },
              [&device](float* p) { device.free(p); }) {}

RankReducers::~RankReducers() = default;

void RankReducers::reserve(std::size_t n) { buffer_.at_least(n); }

std::size_t RankReducers::buffer_floats(std::size_t n, std::uint32_t world) {
  return n + padded_shard_size(n, world);
}

ExactReducer& RankReducers::exact_reducer() {
  if (exact_device_ == nullptr) {
    throw InputError("the exact contract is not available on transport " + transport_.name() +
                     " in this build");
  }
  if (!exact_) {
    exact_ = std::make_unique<ExactReducer>(
        transport_, *exact_device_,
        options_.exact.value_or(ExactOptions::for_device(*exact_device_)));
  }
  return *exact_;
}

std::vector<float> RankReducers::reduce_once(const std::vector<float>& arena, Contract contract,
                                             Op op, DType dtype, Collective coll) {
  if (coll == Collective::kReduceScatter) return reduce_scatter_once(arena, contract, op, dtype);
  const std::size_t n = arena.size();
  float* buffer = buffer_.at_least(n);
  device_.upload(buffer, arena.data(), n * sizeof(float));
  if (contract == Contract::kFixedOrder) {
    fixed_order_.all_reduce(buffer, n, op, dtype);
  } else if (contract == Contract::kExact) {
    exact_reducer().all_reduce(buffer, n, op, dtype);
  } else {
    library_sum_all_reduce(transport_, device_, buffer, n, op, dtype);
  }
  device_.synchronize();
  std::vector<float> reduced(n);
  device_.download(reduced.data(), buffer, n * sizeof(float));
  return reduced;
}

std::vector<float> RankReducers::reduce_scatter_shard(const std::vector<float>& arena,
                                                      Contract contract, Op op, DType dtype) {
  const std::size_t n = arena.size();
  const std::uint32_t world = transport_.world_size();
  const Shard mine = padded_shard_plan(n, world)[transport_.rank()];
  float* buffer = buffer_.at_least(buffer_floats(n, world));
  float* shard = buffer + n;  // apart from the arena, which the collective only reads
  device_.upload(buffer, arena.data(), n * sizeof(float));
  if (contract == Contract::kFixedOrder) {
    fixed_order_.reduce_scatter(buffer, n, shard, mine.count, op, dtype);
  } else if (contract == Contract::kExact) {
    exact_reducer().reduce_scatter(buffer, n, shard, mine.count, op, dtype);
  } else {
    library_sum_reduce_scatter(transport_, device_, buffer, n, shard, mine.count, op, dtype);
  }
  device_.synchronize();
  std::vector<float> own(mine.count);
  device_.download(own.data(), shard, mine.count * sizeof(float));
  return own;
}

std::vector<float> RankReducers::reduce_scatter_once(const std::vector<float>& arena,
                                                     Contract contract, Op op, DType dtype) {
  const std::size_t n = arena.size();
  const std::uint32_t world = transport_.world_size();
  const std::size_t s = padded_shard_size(n, world);
  // The check, after the collective: each rank's shard (zero-padded to s) to every rank.
  std::vector<float> own = reduce_scatter_shard(arena, contract, op, dtype);
  own.resize(s, 0.0f);
  std::vector<float> shards(s * world);
  if (s > 0) transport_.all_gather(own.data(), shards.data(), s * sizeof(float));
  shards.resize(n);
  return shards;
}

namespace {

// The first element where `result` leaves the golden's reduced arena of `contract`
// (library-sum: fixed-order's), streamed from the case id; nullopt if none does.
std::optional<FirstDifference> first_difference(const CaseId& data_case, Contract contract,
                                                const std::vector<float>& result) {
  CaseId reference = data_case;
  reference.contract = contract == Contract::kLibrarySum ? Contract::kFixedOrder : contract;
  std::optional<FirstDifference> first;
  std::size_t offset = 0;
  stream_reference_reduction(reference, [&](const float* values, std::size_t count) {
    for (std::size_t i = 0; i < count && !first; ++i) {
      if (float_bits(result[offset + i]) != float_bits(values[i])) {
        first = FirstDifference{0, offset + i, float_bits(result[offset + i]),
                                float_bits(values[i]), std::nullopt};
      }
    }
    offset += count;
  });
  return first;
}

// Rethrows the exception in flight as the same class (so the same exit code), its message
// led by `where`, the case (and contract) the rank was reducing: a transport fault, a
// deadline or an impossible exact window then names the case in `run`'s output.
[[noreturn]] void rethrow_naming(const std::string& where) {
  try {
    throw;
  } catch (const DeadlineExceeded& error) {
    throw DeadlineExceeded(where + ": " + error.what());
  } catch (const RuntimeFailure& error) {
    throw RuntimeFailure(where + ": " + error.what());
  } catch (const InputError& error) {
    throw InputError(where + ": " + error.what());
  } catch (const InternalError& error) {
    throw InternalError(where + ": " + error.what());
  }
}

std::string case_under(const CaseId& data_case, Contract contract) {
  CaseId id = data_case;
  id.contract = contract;
  return "case " + format_case_id(id);
}

}  // namespace

RankReport run_rank_cases(const RunOptions& options, std::uint32_t rank, std::uint32_t world,
                          RankReducers& reducers, const std::vector<PlannedCase>& cases) {
  RankReport report;
  report.rank = rank;
  report.world = world;
  std::size_t largest = 0;
  for (const PlannedCase& c : cases) {
    const auto n = static_cast<std::size_t>(c.id.count);
    largest = std::max(largest, c.id.coll == Collective::kReduceScatter
                                    ? RankReducers::buffer_floats(n, world)
                                    : n);
  }
  reducers.reserve(largest);
  for (const PlannedCase& c : cases) {
    std::string where = "case " + format_case_id(c.id);
    // Same case and same arena length on every rank before any bytes move: a size mismatch
    // would abort Gloo's receiver and hang NCCL. The ranks agreed on the whole selection
    // first (the caller's precondition), so records that differ now were changed on the way,
    // not given: a runtime failure, not bad input.
    try {
      agree_across_ranks(reducers.transport(), where);
    } catch (const InputError& disagreement) {
      throw RuntimeFailure(where + ": rank " + std::to_string(rank) + ": " + disagreement.what() +
                           ", although every rank agreed on the selection: " +
                           reducers.transport().name() + " delivered wrong bytes");
    } catch (...) {
      rethrow_naming(where);
    }
    const std::vector<float> arena =
        generate_arena(c.id.arena(), rank, static_cast<std::size_t>(c.id.count));
    for (Contract contract : options.contracts()) {
      where = case_under(c.id, contract);
      try {
        RankRecord record;
        record.case_id = format_case_id(c.id);
        record.contract = contract;
        if (contract == Contract::kLibrarySum) {
          record.skipped = c.id.coll == Collective::kReduceScatter
                               ? reducers.transport().library_reduce_scatter_unavailable(c.id.dtype)
                               : reducers.transport().library_sum_unavailable(c.id.dtype);
          // Asked for the library's sum alone, of a dtype it cannot sum: bad input, named,
          // exit 2 (every rank throws alike, before anything is sent). Beside the other
          // contracts it is one skipped result among verified ones.
          if (record.skipped && options.contracts().size() == 1) throw InputError(*record.skipped);
        }
        for (std::uint32_t k = 0; k < options.iters && !record.skipped; ++k) {
          const std::vector<float> reduced =
              reducers.reduce_once(arena, contract, c.id.op, c.id.dtype, c.id.coll);
          const Digest digest = digest_values(reduced.data(), reduced.size(), c.id.dtype);
          record.iteration_digests.push_back(digest);
          // Only a result that fails names its element: a passing run streams nothing more.
          if (!record.first_difference && digest != c.expected_for(contract) &&
              must_equal_golden(c.id, contract)) {
            record.first_difference = first_difference(c.id, contract, reduced);
            if (record.first_difference) record.first_difference->iteration = k + 1;
          }
          if (k != 0 || rank != 0) continue;
          if (contract == Contract::kLibrarySum && record.iteration_digests[0] != c.expected) {
            const LibrarySumCheck check = check_library_sum(c.id, reduced);
            record.differing_elements = check.vs_fixed_order.differing_elements;
            record.max_ulp = check.vs_fixed_order.max_ulp;
            if (!record.first_difference) record.first_difference = check.beyond_association;
          }
          if (options.accuracy && contract != Contract::kExact) {
            record.vs_exact = error_against(c.id, reduced, Contract::kExact);
          }
        }
        report.records.push_back(std::move(record));
      } catch (...) {
        rethrow_naming(where);
      }
    }
  }
  return report;
}

std::vector<CaseResult> decide_cases(const RunOptions& options,
                                     const std::vector<PlannedCase>& cases,
                                     const std::vector<RankReport>& reports) {
  std::vector<CaseResult> results;
  std::size_t index = 0;
  for (const PlannedCase& c : cases) {
    for (Contract contract : options.contracts()) {
      std::vector<const RankRecord*> records;
      for (const RankReport& report : reports) {
        records.push_back(index < report.records.size() ? &report.records[index] : nullptr);
      }
      results.push_back(decide_verdict(c.id, contract, c.expected_for(contract), records));
      ++index;
    }
  }
  return results;
}

}  // namespace rv
