// The byte-count matrix check of the Gloo transport (core/transport/gloo/size_agreement.h):
// which pair is named, self copies, and that a consistent matrix passes.
#include "core/transport/gloo/size_agreement.h"

#include <gtest/gtest.h>

namespace rv::gloo_detail {
namespace {

// rows for W ranks from send[from][to] and expect[at][from]
std::vector<std::uint64_t> table(const std::vector<std::vector<std::size_t>>& send,
                                 const std::vector<std::vector<std::size_t>>& expect) {
  std::vector<std::uint64_t> rows;
  for (std::size_t r = 0; r < send.size(); ++r) {
    const auto row = size_row(send[r], expect[r]);
    rows.insert(rows.end(), row.begin(), row.end());
  }
  return rows;
}

TEST(SizeAgreement, ConsistentMatrixPasses) {
  // rank r sends r + 10 p bytes to p; p expects exactly that.
  std::vector<std::vector<std::size_t>> send(3, std::vector<std::size_t>(3)), expect = send;
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t p = 0; p < 3; ++p) {
      send[r][p] = r + 10 * p;
      expect[p][r] = r + 10 * p;
    }
  }
  const auto rows = table(send, expect);
  EXPECT_EQ(find_size_disagreement(rows, 3), "");
  for (std::uint32_t a = 0; a < 3; ++a) {
    for (std::uint32_t b = 0; b < 3; ++b) EXPECT_TRUE(pair_agrees(rows, 3, a, b));
  }
}

TEST(SizeAgreement, FirstMismatchIsNamedAndOnlyItsPairDisagrees) {
  std::vector<std::vector<std::size_t>> send(3, std::vector<std::size_t>(3, 4)), expect = send;
  send[2][1] = 8;  // rank 2 sends 8 to rank 1, which expects 4
  const auto rows = table(send, expect);
  EXPECT_EQ(find_size_disagreement(rows, 3),
            "rank 2 sends 8 bytes to rank 1, which expects 4 bytes from it");
  EXPECT_FALSE(pair_agrees(rows, 3, 1, 2));
  EXPECT_FALSE(pair_agrees(rows, 3, 2, 1));
  EXPECT_TRUE(pair_agrees(rows, 3, 0, 2));
  EXPECT_TRUE(pair_agrees(rows, 3, 0, 1));
}

TEST(SizeAgreement, SelfCopyMismatchIsNamed) {
  std::vector<std::vector<std::size_t>> send{{3}}, expect{{5}};
  EXPECT_EQ(find_size_disagreement(table(send, expect), 1),
            "rank 0 copies 3 bytes to itself but expects 5");
}

}  // namespace
}  // namespace rv::gloo_detail
