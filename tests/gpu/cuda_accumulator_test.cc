// CudaAccumulator (core/cuda/accumulator/cuda_accumulator.h) against the straight exact reference:
// M addend arrays split over W ranks, some on the GPU and some on the host (the same wire format),
// each adding its share in its own order and ranges, combined as the all-reduces would, finished on
// a GPU rank and on a host rank: the reference's bits for the sum and the mean, on every
// distribution (wide and special data take the host fallback).
#include "core/cuda/accumulator/cuda_accumulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/error.h"
#include "core/exact/exact_accumulator.h"
#include "core/exact/exact_reduction.h"
#include "core/oracle/reference.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv::test {
namespace {

using Arenas = std::vector<std::vector<float>>;

Arenas make(std::uint32_t m, std::size_t n, Distribution dist, std::uint64_t seed) {
  Arenas a;
  for (std::uint32_t r = 0; r < m; ++r) a.push_back(generate_arena({1, dist, seed}, r, n));
  return a;
}

struct Ranks {
  std::vector<std::unique_ptr<CudaAccumulator>> gpu;
  std::vector<std::unique_ptr<ExactAccumulator>> host;
};

// Rank r is on the GPU when r is even. Each adds its addends in ranges cut at `starts`. GPU
// ranks end their micro-batches in one of three ways, by (r / 2 + variant) % 3:
// end_micro_batch; never (their adds settle when the next one overlaps them, and the last by
// settle()); or end_micro_batch_deferred, resolved by the next add or, every other
// micro-batch, by an explicit resolve().
Ranks accumulate(const Arenas& addends, const std::vector<std::vector<std::size_t>>& of_rank,
                 const std::vector<std::size_t>& starts, std::size_t variant = 0) {
  const std::size_t n = addends[0].size();
  Ranks ranks;
  // Every addend in its own buffer, alive until the accumulators are settled (a pending add's
  // values are read again when the host takes a block over).
  std::vector<std::unique_ptr<DeviceBuffer>> values;
  for (const auto& a : addends) {
    values.push_back(std::make_unique<DeviceBuffer>(0, n * sizeof(float)));
    values.back()->upload_floats(a);
  }
  for (std::size_t r = 0; r < of_rank.size(); ++r) {
    if (r % 2 == 0) {
      auto acc = std::make_unique<CudaAccumulator>(0, n);
      const std::size_t pattern = (r / 2 + variant) % 3;
      std::size_t micro_batch = 0;
      for (std::size_t a : of_rank[r]) {
        for (std::size_t k = 0; k < starts.size(); ++k) {
          const std::size_t end = k + 1 < starts.size() ? starts[k + 1] : n;
          acc->add(values[a]->floats() + starts[k], starts[k], end - starts[k], nullptr);
        }
        if (pattern == 0) acc->end_micro_batch();
        if (pattern == 2) {
          acc->end_micro_batch_deferred();
          if (++micro_batch % 2 == 0) acc->resolve();
        }
      }
      acc->settle();  // before `values` goes
      ranks.gpu.push_back(std::move(acc));
    } else {
      auto acc = std::make_unique<ExactAccumulator>(n);
      for (std::size_t a : of_rank[r]) {
        for (std::size_t k = 0; k < starts.size(); ++k) {
          const std::size_t end = k + 1 < starts.size() ? starts[k + 1] : n;
          acc->add(addends[a].data() + starts[k], starts[k], end - starts[k]);
        }
        acc->end_micro_batch();
      }
      ranks.host.push_back(std::move(acc));
    }
  }
  return ranks;
}

// The three rounds as the all-reduces would compute them; the results as the first GPU rank
// (and, in a world of one, its finish_alone) and (when there is one) the first host rank
// finish them.
std::vector<std::vector<float>> combine(Ranks& ranks, Op op, std::uint64_t m, std::size_t n) {
  const auto world = static_cast<std::uint32_t>(ranks.gpu.size() + ranks.host.size());
  std::vector<std::int64_t> agreed, words;
  auto merge = [&](const std::vector<std::int64_t>& w) {
    if (agreed.empty()) agreed.assign(w.size(), INT64_MIN);
    for (std::size_t i = 0; i < w.size(); ++i) agreed[i] = std::max(agreed[i], w[i]);
  };
  for (auto& g : ranks.gpu) {
    words.assign(g->agreement_size(), 0);
    g->agreement_words(0, op, m, words.data(), nullptr);
    merge(words);
  }
  for (auto& h : ranks.host) {
    words.assign(h->agreement_size(), 0);
    h->agreement_words(0, op, m, words.data());
    merge(words);
  }
  std::vector<std::int64_t> summed;
  auto add = [&](const std::vector<std::int64_t>& d) {
    if (summed.empty()) summed.assign(d.size(), 0);
    for (std::size_t i = 0; i < d.size(); ++i) {
      summed[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(summed[i]) +
                                            static_cast<std::uint64_t>(d[i]));
    }
  };
  for (auto& g : ranks.gpu) {
    const std::size_t digit_words = g->plan(agreed.data(), world);
    DeviceBuffer d(0, digit_words * 8);
    d.fill_bytes(0xA5);  // every word must be written
    g->export_digits(static_cast<std::int64_t*>(d.data()), nullptr);
    std::vector<std::int64_t> host(digit_words);
    d.download(host.data(), digit_words * 8);
    add(host);
  }
  for (auto& h : ranks.host) {
    const AccumulatorPlan plan = h->plan(agreed.data(), world);
    std::vector<std::int64_t> digits(plan.words);
    h->export_digits(plan, digits.data());
    add(digits);
  }
  std::vector<std::vector<float>> results;
  DeviceBuffer d_summed(0, summed.size() * 8), d_out(0, n * sizeof(float));
  d_summed.upload(summed.data(), summed.size() * 8);
  d_out.fill_bytes(0xFF);
  ranks.gpu[0]->finish(static_cast<std::int64_t*>(d_summed.data()), op, m, DType::kF32,
                       d_out.floats(), nullptr);
  results.push_back(d_out.download_floats(n));
  if (world == 1) {
    // A world of one also finishes alone: from its digits in place, with no words.
    d_out.fill_bytes(0xFF);
    ranks.gpu[0]->finish_alone(op, m, DType::kF32, d_out.floats(), nullptr);
    results.push_back(d_out.download_floats(n));
  }
  if (!ranks.host.empty()) {
    const AccumulatorPlan plan = ranks.host[0]->plan(agreed.data(), world);
    std::vector<float> out(n);
    finish_accumulated(plan, summed.data(), op, m, n, out.data());
    results.push_back(out);
  }
  return results;
}

TEST(CudaAccumulator, EverySplitOfGpuAndHostRanksGivesTheReference) {
  RV_SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(5);
  for (Distribution dist : kAllDistributions) {
    for (std::uint32_t m : {1u, 3u, 8u}) {
      for (std::size_t n : {std::size_t{1}, std::size_t{1500}, std::size_t{5000}}) {
        const Arenas addends = make(m, n, dist, 40 + m);
        const std::vector<float> sum = reference_exact(addends, Op::kSum);
        const std::vector<float> mean = reference_exact(addends, Op::kMean);
        for (int split = 0; split < 3; ++split) {
          const std::size_t world = 1 + rng() % m;
          std::vector<std::size_t> order(m);
          std::iota(order.begin(), order.end(), 0);
          std::shuffle(order.begin(), order.end(), rng);
          std::vector<std::vector<std::size_t>> of_rank(world);
          for (std::size_t a : order) of_rank[rng() % world].push_back(a);
          std::vector<std::size_t> starts{0};
          for (std::size_t s = exact::kBlock; s < n; s += exact::kBlock) {
            if (rng() % 2 == 0) starts.push_back(s);
          }
          for (Op op : {Op::kSum, Op::kMean}) {
            Ranks ranks = accumulate(addends, of_rank, starts, split);
            for (const auto& got : combine(ranks, op, m, n)) {
              EXPECT_TRUE(same_bits(op == Op::kSum ? sum : mean, got))
                  << to_string(dist) << ", M = " << m << ", n = " << n << ", W = " << world
                  << (op == Op::kSum ? ", sum" : ", mean");
            }
          }
        }
      }
    }
  }
}

TEST(CudaAccumulator, DeferredSettlesGiveTheReference) {
  RV_SKIP_WITHOUT_GPU();
  // One GPU rank ending every micro-batch with end_micro_batch_deferred, on every
  // distribution (the wide and special ones send blocks to the host between micro-batches,
  // so a read-back finds the flag set and the adds of two micro-batches settle together).
  const std::size_t n = 5 * exact::kBlock + 77;
  for (Distribution dist : kAllDistributions) {
    const Arenas addends = make(8, n, dist, 90);
    for (std::size_t cut : {std::size_t{0}, std::size_t{2} * exact::kBlock}) {
      const std::vector<std::size_t> starts =
          cut == 0 ? std::vector<std::size_t>{0} : std::vector<std::size_t>{0, cut};
      for (Op op : {Op::kSum, Op::kMean}) {
        Ranks ranks = rv::test::accumulate(addends, {{7, 0, 3, 1, 6, 2, 5, 4}}, starts, 2);
        EXPECT_TRUE(same_bits(reference_exact(addends, op), combine(ranks, op, 8, n)[0]))
            << to_string(dist) << (cut ? ", two ranges" : ", one range")
            << (op == Op::kSum ? ", sum" : ", mean");
      }
    }
  }
}

TEST(CudaAccumulator, RowsInOneLaunchGiveTheReference) {
  RV_SKIP_WITHOUT_GPU();
  // Two tables of R rows each, a stride of n + extra floats apart, added R rows a call: the
  // first in one range, the second in two ranges, whose first call overlaps the first table's
  // pending add (settled before it). Every distribution: the wide and special ones send blocks
  // to the host for all of a call's rows.
  const std::size_t n = 3 * exact::kBlock + 77;
  for (Distribution dist : kAllDistributions) {
    for (const std::size_t rows : {1, 2, 3, 8}) {
      for (const std::size_t extra : {std::size_t{0}, std::size_t{5}}) {
        const std::size_t stride = n + extra;
        const Arenas addends = make(static_cast<std::uint32_t>(2 * rows), n, dist, 60 + rows);
        std::vector<float> table(2 * rows * stride, std::numeric_limits<float>::quiet_NaN());
        for (std::size_t a = 0; a < addends.size(); ++a) {
          std::copy(addends[a].begin(), addends[a].end(),
                    table.begin() + static_cast<std::ptrdiff_t>(a * stride));
        }
        DeviceBuffer d_table(0, table.size() * sizeof(float));
        d_table.upload_floats(table);
        const float* first = d_table.floats();
        const float* second = first + rows * stride;
        for (Op op : {Op::kSum, Op::kMean}) {
          CudaAccumulator acc(0, n);
          acc.add_rows(first, stride, rows, 0, n, nullptr);
          acc.add_rows(second, stride, rows, 0, exact::kBlock, nullptr);  // overlaps: settles
          acc.add_rows(second + exact::kBlock, stride, rows, exact::kBlock, n - exact::kBlock,
                       nullptr);
          acc.end_micro_batch();
          DeviceBuffer d_out(0, n * sizeof(float));
          d_out.fill_bytes(0xFF);
          acc.finish_alone(op, 2 * rows, DType::kF32, d_out.floats(), nullptr);
          EXPECT_TRUE(same_bits(reference_exact(addends, op), d_out.download_floats(n)))
              << to_string(dist) << ", R = " << rows << ", stride n + " << extra
              << (op == Op::kSum ? ", sum" : ", mean");
        }
      }
    }
  }
}

TEST(CudaAccumulator, RowsKeepNormalDataOnTheDevice) {
  RV_SKIP_WITHOUT_GPU();
  // Sixteen rows of gradient-like data in one call stay on the device (the headroom for 17
  // terms is 5 bits), as sixteen calls of one row do.
  const std::size_t n = 16 * exact::kBlock;
  const Arenas addends = make(16, n, Distribution::kNormal, 8);
  std::vector<float> table;
  for (const auto& a : addends) table.insert(table.end(), a.begin(), a.end());
  DeviceBuffer d_table(0, table.size() * sizeof(float));
  d_table.upload_floats(table);
  CudaAccumulator acc(0, n);
  acc.add_rows(d_table.floats(), n, 16, 0, n, nullptr);
  acc.end_micro_batch();
  EXPECT_EQ(acc.host_blocks(), 0u);
  DeviceBuffer d_out(0, n * sizeof(float));
  acc.finish_alone(Op::kMean, 16, DType::kF32, d_out.floats(), nullptr);
  EXPECT_TRUE(same_bits(reference_exact(addends, Op::kMean), d_out.download_floats(n)));
}

TEST(CudaAccumulator, NormalDataStaysOnTheDevice) {
  RV_SKIP_WITHOUT_GPU();
  const std::size_t n = 64 * exact::kBlock;
  const Arenas addends = make(16, n, Distribution::kNormal, 3);
  Ranks ranks = accumulate(addends, {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}, {0});
  EXPECT_EQ(ranks.gpu[0]->host_blocks(), 0u);
  // 8 bytes an element on the device, and no digits on the host: only its per-block state.
  const std::size_t blocks = n / exact::kBlock, host = ranks.gpu[0]->host().bytes();
  EXPECT_LE(host, blocks * 48 + 1024);
  EXPECT_LE(ranks.gpu[0]->bytes() - host, n * 8 + blocks * 32);
  EXPECT_TRUE(same_bits(reference_exact(addends, Op::kMean), combine(ranks, Op::kMean, 16, n)[0]));
}

TEST(CudaAccumulator, OnlyTheMovedBlocksTakeHostMemory) {
  RV_SKIP_WITHOUT_GPU();
  // Two blocks of 64 meet values the device cannot hold (−0, +Inf): they move to the host,
  // whose digits are those two blocks' (8 KiB each, and a byte of flags an element), not 8
  // bytes for every element.
  const std::size_t n = 64 * exact::kBlock, blocks = 64;
  Arenas addends = make(4, n, Distribution::kNormal, 6);
  addends[1][5 * exact::kBlock + 3] = -0.0f;
  addends[2][40 * exact::kBlock + 1000] = std::numeric_limits<float>::infinity();
  Ranks ranks = accumulate(addends, {{0, 1, 2, 3}}, {0});
  EXPECT_EQ(ranks.gpu[0]->host_blocks(), 2u);
  const std::size_t host = ranks.gpu[0]->host().bytes();
  EXPECT_LE(host, 2 * exact::kBlock * (sizeof(std::int64_t) + 1) + blocks * 48 + 1024);
  EXPECT_LE(ranks.gpu[0]->bytes() - host, n * 8 + blocks * 32);
  EXPECT_TRUE(same_bits(reference_exact(addends, Op::kMean), combine(ranks, Op::kMean, 4, n)[0]));
}

TEST(CudaAccumulator, AClearedAccumulatorReadsAsANewOne) {
  RV_SKIP_WITHOUT_GPU();
  // clear() leaves the digits' memory as it was (docs/DESIGN.md §11): a block the next step
  // leaves at zero must still read as zero digits, whether the device exports it (another rank
  // has values there), finishes it alone, or moves it to the host (a −0 as its only addend).
  const std::size_t n = 8 * exact::kBlock;
  const Arenas earlier = make(2, n, Distribution::kNormal, 11);
  Arenas step = make(2, n, Distribution::kNormal, 12);
  for (std::size_t b : {1u, 3u, 5u}) {
    std::fill_n(step[0].begin() + static_cast<std::ptrdiff_t>(b * exact::kBlock), exact::kBlock,
                0.0f);
  }
  step[0][5 * exact::kBlock + 17] = -0.0f;
  for (Op op : {Op::kSum, Op::kMean}) {
    for (bool alone : {true, false}) {
      auto acc = std::make_unique<CudaAccumulator>(0, n);
      DeviceBuffer values(0, n * sizeof(float));
      for (const auto& a : earlier) {
        values.upload_floats(a);
        acc->add(values.floats(), 0, n, nullptr);
        acc->end_micro_batch();
      }
      acc->clear(nullptr);
      values.upload_floats(step[0]);
      acc->add(values.floats(), 0, n, nullptr);
      acc->end_micro_batch();
      EXPECT_EQ(acc->host_blocks(), 1u);  // block 5, moved with no nonzero digit
      Ranks ranks;
      ranks.gpu.push_back(std::move(acc));
      Arenas addends{step[0]};
      if (!alone) {
        auto host = std::make_unique<ExactAccumulator>(n);
        host->add(step[1].data(), 0, n);
        host->end_micro_batch();
        ranks.host.push_back(std::move(host));
        addends.push_back(step[1]);
      }
      const auto m = static_cast<std::uint64_t>(addends.size());
      for (const auto& got : combine(ranks, op, m, n)) {
        EXPECT_TRUE(same_bits(reference_exact(addends, op), got))
            << (alone ? "world of one" : "beside a host rank")
            << (op == Op::kSum ? ", sum" : ", mean");
      }
    }
  }
}

TEST(CudaAccumulator, FinishAloneSettlesTheLastMicroBatchBehindItsRounding) {
  RV_SKIP_WITHOUT_GPU();
  // Every micro-batch ended deferred, and the last one's −0 and NaN mark two blocks for the
  // host: finish_alone is called with its adds unresolved, rounds the device's blocks, then
  // settles and writes the host's. The reference's bits, sum and mean, on every distribution.
  const std::size_t n = 6 * exact::kBlock + 300;
  for (Distribution dist : kAllDistributions) {
    Arenas addends = make(5, n, dist, 21);
    addends[4][2 * exact::kBlock + 9] = -0.0f;
    addends[4][5 * exact::kBlock + 1] = std::numeric_limits<float>::quiet_NaN();
    for (Op op : {Op::kSum, Op::kMean}) {
      std::vector<std::unique_ptr<DeviceBuffer>> values;
      CudaAccumulator acc(0, n);
      for (const auto& a : addends) {
        values.push_back(std::make_unique<DeviceBuffer>(0, n * sizeof(float)));
        values.back()->upload_floats(a);
        acc.add(values.back()->floats(), 0, n, nullptr);
        acc.end_micro_batch_deferred();
      }
      DeviceBuffer out(0, n * sizeof(float));
      out.fill_bytes(0xFF);
      acc.finish_alone(op, 5, DType::kF32, out.floats(), nullptr);
      EXPECT_GE(acc.host_blocks(), 2u);
      EXPECT_TRUE(same_bits(reference_exact(addends, op), out.download_floats(n)))
          << to_string(dist) << (op == Op::kSum ? ", sum" : ", mean");
    }
  }
  CudaAccumulator acc(0, 10);
  DeviceBuffer out(0, 10 * sizeof(float));
  EXPECT_THROW(acc.finish_alone(Op::kMean, 0, DType::kF32, out.floats(), nullptr), InputError);
}

TEST(CudaAccumulator, EntryChecks) {
  RV_SKIP_WITHOUT_GPU();
  CudaAccumulator acc(0, 3000);
  DeviceBuffer values(0, 3000 * sizeof(float));
  EXPECT_THROW(acc.add(values.floats(), 5, 10, nullptr), InputError);
  EXPECT_THROW(acc.add(values.floats(), 2048, 2000, nullptr), InputError);
  DeviceBuffer out(0, 3000 * sizeof(float)), summed(0, 8);
  EXPECT_THROW(acc.finish(static_cast<std::int64_t*>(summed.data()), Op::kMean, 1, DType::kF32,
                          out.floats(), nullptr),
               InputError);  // no plan yet
}

}  // namespace
}  // namespace rv::test
