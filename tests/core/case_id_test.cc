// Case ids (docs/DESIGN.md §3, issue 2): the canonical text round-trips, and every malformed or
// out-of-range form is refused with an InputError that names the field.
#include "core/case_id.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace rv {
namespace {

using ::testing::HasSubstr;

constexpr const char* kExample =
    "contract=fixed-order,op=mean,w=4,n=1000003,dist=wide,seed=7,gen=1";

TEST(CaseId, ParsesTheExampleOfTheIssue) {
  const CaseId id = parse_case_id(kExample);
  EXPECT_EQ(id.contract, Contract::kFixedOrder);
  EXPECT_EQ(id.op, Op::kMean);
  EXPECT_EQ(id.world, 4u);
  EXPECT_EQ(id.count, 1000003u);
  EXPECT_EQ(id.dist, Distribution::kWide);
  EXPECT_EQ(id.seed, 7u);
  EXPECT_EQ(id.gen, 1u);
  EXPECT_EQ(format_case_id(id), kExample);
}

TEST(CaseId, RoundTripsEveryFieldValue) {
  std::uint64_t state = 12345;
  const auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 11;
  };
  const std::uint64_t seeds[] = {0, 1, 9, 10, 4294967296ull, 18446744073709551615ull};
  for (int trial = 0; trial < 2000; ++trial) {
    CaseId id;
    id.contract = trial % 3 == 0 ? Contract::kLibrarySum : Contract::kFixedOrder;
    id.op = trial % 2 ? Op::kMean : Op::kSum;
    id.world = 1 + static_cast<std::uint32_t>(next() % kMaxWorld);
    id.count = next() % (kMaxTotalElements / id.world + 1);
    if (trial % 7 == 0) id.count = 0;
    id.dist = kAllDistributions[trial % 5];
    id.seed = trial < 6 ? seeds[trial] : next();
    id.dtype = trial % 5 == 1 ? DType::kBF16 : trial % 5 == 2 ? DType::kF16 : DType::kF32;
    id.coll = trial % 4 == 3 ? Collective::kReduceScatter : Collective::kAllReduce;
    const std::string text = format_case_id(id);
    const CaseId back = parse_case_id(text);
    ASSERT_EQ(back, id) << text;
    ASSERT_EQ(format_case_id(back), text);
  }
  // The limits themselves are valid.
  EXPECT_NO_THROW(
      parse_case_id("contract=fixed-order,op=sum,w=4096,n=262144,dist=exact,seed=0,gen=1"));
  EXPECT_NO_THROW(
      parse_case_id("contract=fixed-order,op=sum,w=1,n=1073741824,dist=exact,seed=0,gen=1"));
}

TEST(CaseId, EqualityLooksAtEveryField) {
  const CaseId base = parse_case_id(kExample);
  std::vector<CaseId> changed(9, base);
  changed[0].contract = Contract::kLibrarySum;
  changed[1].op = Op::kSum;
  changed[2].world = 5;
  changed[3].count = 1000004;
  changed[4].dist = Distribution::kExact;
  changed[5].seed = 8;
  changed[6].gen = 2;
  changed[7].dtype = DType::kF16;
  changed[8].coll = Collective::kReduceScatter;
  for (const CaseId& other : changed) {
    EXPECT_NE(other, base);
    EXPECT_FALSE(other == base);
  }
}

struct Malformed {
  std::string text;
  std::string names;  // a part of the message that names the field at fault
};

std::string with(const std::string& field_and_value, std::size_t index) {
  // kExample with field `index` (0-based) replaced by field_and_value.
  std::vector<std::string> fields;
  std::string rest = kExample;
  for (std::size_t comma; (comma = rest.find(',')) != std::string::npos;) {
    fields.push_back(rest.substr(0, comma));
    rest = rest.substr(comma + 1);
  }
  fields.push_back(rest);
  fields[index] = field_and_value;
  std::string text;
  for (std::size_t i = 0; i < fields.size(); ++i) text += (i ? "," : "") + fields[i];
  return text;
}

std::vector<Malformed> malformed_ids() {
  const std::string e = kExample;
  return {
      // Structure: order, missing, extra, trailing, empty.
      {"", "'contract=…'"},
      {"contract=fixed-order,w=4,op=mean,n=1000003,dist=wide,seed=7,gen=1", "'op=…'"},
      {"op=mean,contract=fixed-order,w=4,n=1000003,dist=wide,seed=7,gen=1", "'contract=…'"},
      {"contract=fixed-order,op=mean,w=4,n=1000003,seed=7,gen=1", "'dist=…'"},
      {"contract=fixed-order,op=mean,w=4,n=1000003,dist=wide,seed=7", "after 'seed'"},
      {"contract=fixed-order,op=mean,w=4,n=1000003,dist=wide,seed=7,", "'gen=…'"},
      {"contract=fixed-order,op=mean,n=1000003,dist=wide,seed=7,gen=1", "'w=…'"},
      {"contract=fixed-order,op=mean,x=1,w=4,n=1000003,dist=wide,seed=7,gen=1", "'w=…'"},
      {e + ",extra=1", "after gen"},
      {e + ",gen=1", "after gen"},
      {e + ",", "after gen"},
      {e + " ", "'gen'"},
      {e + "\n", "'gen'"},
      {e + "x", "'gen'"},
      {std::string(e).insert(20, 1, '\0'), "contract 'fixed-order?'"},
      {" " + e, "'contract=…'"},
      {"CONTRACT=fixed-order" + e.substr(20), "'contract=…'"},
      {with("OP=mean", 1), "'op=…'"},
      {with("w", 2), "'w=…'"},
      {with("w:4", 2), "'w=…'"},
      // Numbers: empty, signs, leading zeros, other bases, overflow.
      {with("w=", 2), "'w' is empty"},
      {with("w=+4", 2), "'w'"},
      {with("w=-4", 2), "'w'"},
      {with("w= 4", 2), "'w'"},
      {with("w=4.0", 2), "'w'"},
      {with("w=0x4", 2), "'w'"},
      {with("w=04", 2), "'w' has a leading zero"},
      {with("n=00", 3), "'n' has a leading zero"},
      {with("seed=007", 5), "'seed' has a leading zero"},
      {with("gen=01", 6), "'gen' has a leading zero"},
      {with("seed=18446744073709551616", 5), "'seed' overflows"},
      {with("seed=99999999999999999999999", 5), "'seed' overflows"},
      {with("n=99999999999999999999", 3), "'n' overflows"},
      // Ranges: W, N, W × N, generator.
      {with("w=0", 2), "w = 0"},
      {with("w=4097", 2), "'w' = 4097"},
      {with("w=1000000", 2), "'w' = 1000000"},
      {with("n=1073741825", 3), "'n' = 1073741825"},
      {with("n=99999999999", 3), "'n' = 99999999999"},
      {with("w=2", 2).replace(with("w=2", 2).find("n=1000003"), 9, "n=1073741824"), "w × n"},
      {with("w=4096", 2).replace(with("w=4096", 2).find("n=1000003"), 9, "n=262145"), "w × n"},
      {with("gen=0", 6), "gen = 0"},
      {with("gen=2", 6), "gen = 2"},
      {with("gen=99999999", 6), "'gen'"},
      // Words: contract, op, dist.
      {with("contract=exactly", 0), "contract 'exactly'"},
      {with("contract=Fixed-Order", 0), "contract"},
      {with("contract=", 0), "contract ''"},
      {with("op=max", 1), "op 'max'"},
      {with("op=SUM", 1), "op 'SUM'"},
      {with("dist=gauss", 4), "dist 'gauss'"},
      {with("dist=", 4), "dist ''"},
      {with("dist=Wide", 4), "dist 'Wide'"},
      // The optional keys: only the non-default value is written, and only in its place.
      {"contract=exact,op=sum,coll=all-reduce,w=4,n=3,dist=wide,seed=7,gen=1",
       "leaving coll out"},
      {"contract=exact,op=sum,coll=allgather,w=4,n=3,dist=wide,seed=7,gen=1",
       "coll 'allgather'"},
      {"contract=exact,op=sum,dtype=bf16,coll=reduce-scatter,w=4,n=3,dist=wide,seed=7,gen=1",
       "'w=…'"},
      {"coll=reduce-scatter,contract=exact,op=sum,w=4,n=3,dist=wide,seed=7,gen=1",
       "'contract=…'"},
  };
}

TEST(CaseId, EveryMalformedFormIsAnInputErrorNamingTheField) {
  for (const Malformed& bad : malformed_ids()) {
    SCOPED_TRACE("case id: " + bad.text);
    try {
      const CaseId id = parse_case_id(bad.text);
      ADD_FAILURE() << "accepted as " << format_case_id(id);
    } catch (const InputError& error) {
      EXPECT_THAT(error.what(), HasSubstr(bad.names));
      EXPECT_THAT(error.what(), HasSubstr("case id"));
      EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos) << "one line";
    }
  }
}

TEST(CaseId, ReduceScatterIdsCarryCollBeforeDtype) {
  const std::string text =
      "contract=exact,op=mean,coll=reduce-scatter,dtype=f16,w=3,n=1000,dist=normal,seed=1,gen=1";
  const CaseId id = parse_case_id(text);
  EXPECT_EQ(id.coll, Collective::kReduceScatter);
  EXPECT_EQ(id.dtype, DType::kF16);
  EXPECT_EQ(format_case_id(id), text);
  CaseId all_reduce = id;
  all_reduce.coll = Collective::kAllReduce;  // the id every all-reduce had before coll existed
  EXPECT_EQ(format_case_id(all_reduce),
            "contract=exact,op=mean,dtype=f16,w=3,n=1000,dist=normal,seed=1,gen=1");
  EXPECT_EQ(parse_collective("reduce-scatter"), Collective::kReduceScatter);
  EXPECT_EQ(to_string(Collective::kAllReduce), "all-reduce");
  EXPECT_FALSE(parse_collective("reduce_scatter").has_value());
}

TEST(CaseId, ValidateRefusesOutOfRangeFields) {
  CaseId id = parse_case_id(kExample);
  EXPECT_NO_THROW(validate_case_id(id));
  CaseId bad = id;
  bad.world = 0;
  EXPECT_THROW(validate_case_id(bad), InputError);
  bad = id;
  bad.world = kMaxWorld + 1;
  EXPECT_THROW(validate_case_id(bad), InputError);
  bad = id;
  bad.count = kMaxCount + 1;
  EXPECT_THROW(validate_case_id(bad), InputError);
  bad = id;
  bad.gen = 3;
  EXPECT_THROW(validate_case_id(bad), InputError);
  bad = id;
  bad.world = 1024;
  bad.count = kMaxTotalElements / 1024 + 1;
  EXPECT_THROW(validate_case_id(bad), InputError);
}

TEST(CaseId, ContractAndOpNamesRoundTrip) {
  for (Contract contract : {Contract::kFixedOrder, Contract::kLibrarySum, Contract::kExact}) {
    EXPECT_EQ(parse_contract(to_string(contract)), contract);
  }
  for (Op op : {Op::kSum, Op::kMean}) EXPECT_EQ(parse_op(to_string(op)), op);
  EXPECT_EQ(parse_contract("exact"), Contract::kExact);
  EXPECT_FALSE(parse_contract("both").has_value());  // a run option, not a contract
  EXPECT_FALSE(parse_op("max").has_value());
}

}  // namespace
}  // namespace rv
