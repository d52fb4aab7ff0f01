// decide_verdict over a reduce-scatter case (docs/DESIGN.md §2.6): a passing case says every
// rank's shard is the all-reduce's slice, and a failing one names, for the first wrong element,
// the rank whose shard holds it.
#include "verify/live/run_results.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "core/case_id.h"

namespace rv {
namespace {

using ::testing::HasSubstr;

TEST(ReduceScatterVerdict, NamesTheShardOfTheFirstWrongElement) {
  // n = 1000 over W = 3: shards of s = 334 elements, so element 700 is rank 2's.
  const CaseId id = parse_case_id(
      "contract=fixed-order,op=sum,coll=reduce-scatter,w=3,n=1000,dist=normal,seed=1,gen=1");
  Digest golden;
  golden.canonical[0] = 1;
  Digest wrong;
  wrong.canonical[0] = 2;
  std::vector<RankRecord> records(3);
  for (RankRecord& record : records) record.iteration_digests = {wrong};
  records[1].first_difference = FirstDifference{1, 700, 0x3f800000u, 0x3f800001u, std::nullopt};
  const std::vector<const RankRecord*> pointers = {&records[0], &records[1], &records[2]};
  const CaseResult failed = decide_verdict(id, Contract::kFixedOrder, golden, pointers);
  EXPECT_EQ(failed.verdict, Verdict::kFailed);
  EXPECT_THAT(failed.detail, HasSubstr("element 700 (rank 2's shard)")) << failed.detail;

  for (RankRecord& record : records) {
    record.iteration_digests = {golden};
    record.first_difference.reset();
  }
  const CaseResult passed = decide_verdict(id, Contract::kFixedOrder, golden, pointers);
  EXPECT_EQ(passed.verdict, Verdict::kOk);
  EXPECT_THAT(passed.detail, HasSubstr("every rank's shard is the all-reduce's slice"));
}

}  // namespace
}  // namespace rv
