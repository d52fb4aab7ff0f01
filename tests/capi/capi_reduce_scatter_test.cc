// The C ABI's reduce-scatter (docs/DESIGN.md §2.6) as a caller with its own all-to-all uses
// it: rv_reduce_scatter_shard gives each rank its shard of FSDP's padded layout, the test
// moves every rank's slice into the owner's stacked table (as torch.distributed would), and
// rv_fixed_order_reduce_stacked_dtype / rv_exact_reduce_stacked_dtype reduce it. Every shard must
// hold the bits of the core's straight all-reduce references at its indices, and the shards in rank
// order the whole, for W = 1 … 8, n = 0, 1, W − 1, W + 1, 1000, 4099, FSDP's and a larger
// shard size, f32, bf16 and f16, every distribution, both contracts and ops. And the layout's
// refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "capi/reduce_verify_c.h"
#include "core/arena.h"
#include "core/dtype_law.h"
#include "core/oracle/reference.h"

namespace rv {
namespace {

int c_dtype(DType dtype) {
  return dtype == DType::kF32 ? RV_DTYPE_F32 : dtype == DType::kBF16 ? RV_DTYPE_BF16 : RV_DTYPE_F16;
}

// n values of `dtype` (held widened) in that dtype's own bytes.
std::vector<unsigned char> as_bytes(DType dtype, const float* values, std::size_t n) {
  std::vector<unsigned char> out(n * dtype_bytes(dtype));
  for (std::size_t i = 0; i < n; ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(&out[i * 4], &values[i], 4);
    } else {
      const std::uint16_t bits = half_bits(dtype, values[i]);
      std::memcpy(&out[i * 2], &bits, 2);
    }
  }
  return out;
}

struct Layout {
  std::size_t begin = 0, count = 0, size = 0;
};

Layout shard_of_rank(std::size_t n, std::uint32_t w, std::uint32_t rank, std::size_t size) {
  Layout l;
  EXPECT_EQ(rv_reduce_scatter_shard(n, w, rank, size, &l.begin, &l.count, &l.size), RV_OK)
      << rv_last_error();
  return l;
}

TEST(CapiReduceScatter, EveryShardReducedFromItsTableIsTheAllReducesSlice) {
  std::size_t shards_checked = 0;
  for (std::uint32_t w = 1; w <= 8; ++w) {
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{w - 1},
                                std::size_t{w + 1}, std::size_t{1000}, std::size_t{4099}}) {
      for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
        for (const Distribution dist : kAllDistributions) {
          std::vector<std::vector<float>> arenas;
          std::vector<std::vector<unsigned char>> bytes;
          for (std::uint32_t r = 0; r < w; ++r) {
            arenas.push_back(generate_arena({1, dist, 700 + w, dtype}, r, n));
            bytes.push_back(as_bytes(dtype, arenas[r].data(), n));
          }
          const std::size_t fsdp = n / w + (n % w != 0);
          for (const bool exact : {false, true}) {
            for (const Op op : {Op::kSum, Op::kMean}) {
              const int c_op = op == Op::kSum ? RV_OP_SUM : RV_OP_MEAN;
              const std::vector<float> whole = exact ? reference_exact(arenas, op, dtype)
                                                     : reference_fixed_order(arenas, op, dtype);
              const auto whole_bytes = as_bytes(dtype, whole.data(), n);
              for (const std::size_t size : {std::size_t{0}, fsdp + 3}) {
                std::vector<unsigned char> joined;
                const std::size_t e = dtype_bytes(dtype);
                for (std::uint32_t p = 0; p < w; ++p) {
                  const Layout l = shard_of_rank(n, w, p, size);
                  EXPECT_EQ(l.size, size == 0 ? fsdp : size);
                  // The all-to-all: rank r's slice of shard p into slot r of p's table.
                  std::vector<unsigned char> table(w * l.count * e);
                  for (std::uint32_t r = 0; r < w; ++r) {
                    if (l.count != 0) {
                      std::memcpy(&table[r * l.count * e], &bytes[r][l.begin * e], l.count * e);
                    }
                  }
                  std::vector<unsigned char> shard(l.count * e);
                  const rv_status status =
                      exact
                          ? rv_exact_reduce_stacked_dtype(table.data(), w, l.count, l.count, c_op,
                                                          c_dtype(dtype), shard.data())
                          : rv_fixed_order_reduce_stacked_dtype(table.data(), w, l.count, l.count,
                                                                c_op, c_dtype(dtype), shard.data());
                  ASSERT_EQ(status, RV_OK) << rv_last_error();
                  ASSERT_EQ(std::memcmp(shard.data(), &whole_bytes[l.begin * e], shard.size()), 0)
                      << (exact ? "exact " : "fixed-order ") << to_string(op) << " "
                      << to_string(dtype) << " " << to_string(dist) << " w=" << w << " n=" << n
                      << " size " << size << " rank " << p;
                  joined.insert(joined.end(), shard.begin(), shard.end());
                  ++shards_checked;
                }
                ASSERT_EQ(joined, whole_bytes) << "the shards concatenated, w=" << w << " n=" << n;
              }
            }
          }
        }
      }
    }
  }
  // Σ over W = 1 … 8 of W × 6 counts × 3 dtypes × 5 distributions × 2 contracts × 2 ops × 2
  // sizes: 36 × 720.
  EXPECT_EQ(shards_checked, std::size_t{36} * 720);
}

TEST(CapiReduceScatter, TheLayoutIsFsdpsAndRefusesWhatNoPlanHolds) {
  // 10 elements over 4 ranks, FSDP's size 3: 3, 3, 3, 1; with size 4: 4, 4, 2, 0 (at 10).
  const std::size_t fsdp_begin[] = {0, 3, 6, 9}, fsdp_count[] = {3, 3, 3, 1};
  const std::size_t four_begin[] = {0, 4, 8, 10}, four_count[] = {4, 4, 2, 0};
  for (std::uint32_t p = 0; p < 4; ++p) {
    const Layout fsdp = shard_of_rank(10, 4, p, 0);
    EXPECT_EQ(fsdp.begin, fsdp_begin[p]);
    EXPECT_EQ(fsdp.count, fsdp_count[p]);
    EXPECT_EQ(fsdp.size, 3u);
    const Layout four = shard_of_rank(10, 4, p, 4);
    EXPECT_EQ(four.begin, four_begin[p]);
    EXPECT_EQ(four.count, four_count[p]);
    EXPECT_EQ(four.size, 4u);
  }
  std::size_t b = 0, c = 0, s = 0;
  EXPECT_EQ(rv_reduce_scatter_shard(10, 4, 0, 2, &b, &c, &s), RV_INPUT_ERROR);
  EXPECT_NE(std::string(rv_last_error()).find("a shard size of 2 elements over 4 ranks"),
            std::string::npos)
      << rv_last_error();
  EXPECT_EQ(rv_reduce_scatter_shard(10, 0, 0, 0, &b, &c, &s), RV_INPUT_ERROR);
  EXPECT_EQ(rv_reduce_scatter_shard(10, 4, 4, 0, &b, &c, &s), RV_INPUT_ERROR);
  EXPECT_EQ(rv_reduce_scatter_shard(10, 4, 0, 0, nullptr, &c, &s), RV_INPUT_ERROR);
  EXPECT_EQ(rv_reduce_scatter_shard(0, 4, 3, 0, &b, &c, &s), RV_OK) << rv_last_error();
  EXPECT_EQ(b, 0u);
  EXPECT_EQ(c, 0u);
  EXPECT_EQ(s, 0u);
}

}  // namespace
}  // namespace rv
