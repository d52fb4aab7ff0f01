// The audit's classification: for each way two trails can part, a pair of trails that
// parts only that way, and the step, bucket and rank the audit must name.
#include "verify/audit/trail_audit.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/audit/trail_text.h"

namespace rv {
namespace {

using test::digest_of;

TrailFile parsed(const std::vector<nlohmann::json>& records, const std::string& path) {
  return parse_trail(path, test::chained(records));
}

struct Pair {
  std::vector<nlohmann::json> a = test::trail_records(4, 5, 3), b = a;
  AuditResult audit() const { return audit_trails(parsed(a, "a.jsonl"), parsed(b, "b.jsonl")); }
};

TEST(TrailAudit, EqualTrailsAgree) {
  const AuditResult result = Pair().audit();
  EXPECT_EQ(result.parting, Parting::kNone);
  EXPECT_EQ(result.steps_compared, 5u);
  EXPECT_EQ(result.report["verdict"], "agree");
}

TEST(TrailAudit, AnInputThatDiffersIsComputeUpstreamAtItsRankAndBucket) {
  Pair pair;
  // Record 4 is step 2. Rank 3's input of bucket 1 differs, and so (as it would) does every
  // result after it: the first difference is still named as the input.
  pair.b[3]["buckets"][1]["inputs"][3] = digest_of(777);
  pair.b[3]["buckets"][1]["results"] = {digest_of(1), digest_of(1), digest_of(1), digest_of(1)};
  pair.b[4]["buckets"][0]["inputs"][0] = digest_of(778);
  const AuditResult result = pair.audit();
  EXPECT_EQ(result.parting, Parting::kComputeUpstream);
  EXPECT_EQ(result.step, 2u);
  EXPECT_EQ(result.bucket, 1u);
  EXPECT_EQ(result.rank, 3u);
  EXPECT_EQ(result.record_a, 4u);
  EXPECT_NE(result.summary.find("step 2, bucket 1"), std::string::npos) << result.summary;
  EXPECT_NE(result.detail.find("record step 2 in full"), std::string::npos);
}

TEST(TrailAudit, EqualInputsWithAnotherResultAreTheReductionNamingTheHooks) {
  Pair pair;
  pair.b[0]["hooks"] = {"torch.allreduce_hook"};
  pair.b[2]["buckets"][2]["results"][1] = digest_of(4242);
  const AuditResult result = pair.audit();
  EXPECT_EQ(result.parting, Parting::kReduction);
  EXPECT_EQ(result.step, 1u);
  EXPECT_EQ(result.bucket, 2u);
  EXPECT_EQ(result.rank, 1u);
  EXPECT_NE(result.detail.find("A fixed_order_hook; B torch.allreduce_hook"), std::string::npos)
      << result.detail;
}

TEST(TrailAudit, AgreeingBucketsWithOtherParametersAreTheOptimizer) {
  Pair pair;
  pair.b[5]["params"][0] = digest_of(31337);
  const AuditResult result = pair.audit();
  EXPECT_EQ(result.parting, Parting::kOptimizer);
  EXPECT_EQ(result.step, 4u);
}

TEST(TrailAudit, AnotherOptimizerStateIsTheOptimizer) {
  Pair pair;
  for (auto* records : {&pair.a, &pair.b}) {
    (*records)[3]["optimizer"] = {digest_of(1), digest_of(1), digest_of(1), digest_of(1)};
  }
  pair.b[3]["optimizer"][2] = digest_of(2);
  const AuditResult result = pair.audit();
  EXPECT_EQ(result.parting, Parting::kOptimizer);
  EXPECT_EQ(result.step, 2u);
  EXPECT_EQ(result.rank, 2u);
}

TEST(TrailAudit, OtherLayoutsAreComparedByTheirParameters) {
  Pair pair;
  pair.b[2] = test::step(1, 4, 5);  // step 1 in 5 buckets, parameters the same
  pair.b[2]["params"] = pair.a[2]["params"];
  AuditResult result = pair.audit();
  EXPECT_EQ(result.parting, Parting::kNone);
  EXPECT_NE(result.note.find("the bucket layouts differ from step 1"), std::string::npos);
  pair.b[2]["params"][0] = digest_of(9);
  result = pair.audit();
  EXPECT_EQ(result.parting, Parting::kLayout);
  EXPECT_EQ(result.step, 1u);
}

TEST(TrailAudit, AnotherParameterOrderInTheSameCountsIsALayout) {
  // A resumed run's fresh DDP reduces its first step in its initial bucket order and the
  // uninterrupted run in its rebuilt one: the same counts, other bytes. The trail names each
  // bucket's parameter order ("layout"); where both name it and they differ, the step is
  // compared by its parameters, not called compute upstream.
  Pair pair;
  for (auto* records : {&pair.a, &pair.b}) {
    for (auto& record : *records) {
      if (!record.contains("buckets")) continue;
      for (auto& bucket : record["buckets"]) bucket["layout"] = "00000000000000aa";
    }
  }
  pair.b[3]["buckets"][1]["layout"] = "00000000000000bb";
  pair.b[3]["buckets"][1]["inputs"][0] = digest_of(5150);  // the other order's bytes
  AuditResult result = pair.audit();
  EXPECT_EQ(result.parting, Parting::kNone) << result.summary;
  EXPECT_NE(result.note.find("the bucket layouts differ from step 2"), std::string::npos)
      << result.note;
  EXPECT_NE(result.note.find("10:00000000000000bb"), std::string::npos) << result.note;
  // One record without the field: compared by counts, as trails written before it.
  pair.b[3]["buckets"][1].erase("layout");
  result = pair.audit();
  EXPECT_EQ(result.parting, Parting::kComputeUpstream);
  EXPECT_EQ(result.step, 2u);
}

TEST(TrailAudit, ALayoutThatIsNotSixteenHexDigitsIsNamed) {
  std::vector<nlohmann::json> records = test::trail_records(2, 2, 1);
  records[1]["buckets"][0]["layout"] = "xyz";
  try {
    parsed(records, "bad.jsonl");
    FAIL() << "a malformed layout was read";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("\"layout\" holds \"xyz\""), std::string::npos)
        << error.what();
  }
}

TEST(TrailAudit, TrailsThatDoNotLineUpAreNamed) {
  auto message = [](const std::vector<nlohmann::json>& a, const std::vector<nlohmann::json>& b) {
    try {
      audit_trails(parsed(a, "a.jsonl"), parsed(b, "b.jsonl"));
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message(test::trail_records(2, 3), test::trail_records(4, 3))
                .find("a.jsonl is a world of 2, b.jsonl of 4"),
            std::string::npos);
  EXPECT_NE(message(test::trail_records(2, 3), test::trail_records(2, 5))
                .find("a.jsonl ends at step 2 (record 5, with its end record), b.jsonl goes on "
                      "to step 4"),
            std::string::npos);
  auto cut = test::trail_records(2, 5);
  cut.resize(3);
  EXPECT_NE(message(test::trail_records(2, 5), cut)
                .find("b.jsonl ends at step 1 (record 3, "
                      "without an end record"),
            std::string::npos);
  auto other_model = test::trail_records(2, 3);
  other_model[0]["parameters"] = 1000;
  auto model = test::trail_records(2, 3);
  model[0]["parameters"] = 999;
  EXPECT_NE(message(model, other_model)
                .find("different models (a.jsonl: 999 parameters, b.jsonl: 1000 parameters)"),
            std::string::npos)
      << message(model, other_model);
  auto tree = test::trail_records(2, 3);
  tree[0]["digest"] = "xxh3-tree-4k";
  EXPECT_NE(message(test::trail_records(2, 3), tree).find("b.jsonl with xxh3-tree-4k"),
            std::string::npos);
}

}  // namespace
}  // namespace rv
