// Detection power (issue 2): the committed suite golden/fixed-order.xxh128 must catch every
// plausible way a reducer can get the contract wrong. Each wrong reducer is written here, in
// one small configurable model of the reducer, and must change at least one digest of the
// suite; the same model configured correctly must reproduce every line (so these tests can
// fail). `exact` cases are shown blind to reordering — their purpose is to catch lost or
// misrouted bytes, even under library-sum — and not blind to lost bytes.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/digest/digest.h"
#include "core/fold_law.h"
#include "core/oracle/case_reduction.h"
#include "core/shard_plan.h"
#include "verify/golden/golden_file.h"

namespace rv {
namespace {

using Arenas = std::vector<std::vector<float>>;

// How a reducer might compute the contract; the defaults are the contract itself.
struct ReducerModel {
  enum class Association { kChain, kReversed, kPairwiseTree, kRotated };
  enum class Dataflow {
    kWhole,               // one fold over whole arenas
    kSharded,             // the owner dataflow of the live reducers, done right
    kShardEndOffByOne,    // each owner reduces [begin, end - 1): the last element is lost
    kRemainderForgotten,  // shard sizes N / W: the N mod W extra elements are never reduced
    kPeerDropped,         // owner p never receives peer (p + 1) mod W: its slot stays 0.0
  };
  std::string name;
  Association association = Association::kChain;
  Dataflow dataflow = Dataflow::kWhole;
  bool start_from_positive_zero = false;
  bool pre_scale_mean = false;
  bool flush_subnormal_inputs = false;
  bool flush_subnormal_results = false;
  bool canonicalize_nan = true;
};

float flush(float value) {
  return std::fpclassify(value) == FP_SUBNORMAL ? std::copysign(0.0f, value) : value;
}

class ElementFold {
 public:
  ElementFold(const ReducerModel& model, std::uint32_t world, Op op)
      : model_(model), world_(world), op_(op), scale_(1.0f / static_cast<float>(world)) {}

  // addends[r] is rank r's value (already 0.0 where a copy never arrived).
  float operator()(std::vector<float>& addends) const {
    for (float& a : addends) {
      if (model_.flush_subnormal_inputs) a = flush(a);
      if (op_ == Op::kMean && model_.pre_scale_mean) a = result(a * scale_);
    }
    float acc = 0.0f;
    switch (model_.association) {
      case ReducerModel::Association::kChain:
        acc = chain(addends, 0);
        break;
      case ReducerModel::Association::kRotated:
        acc = chain(addends, world_ / 2);
        break;
      case ReducerModel::Association::kReversed: {
        std::vector<float> reversed(addends.rbegin(), addends.rend());
        acc = chain(reversed, 0);
        break;
      }
      case ReducerModel::Association::kPairwiseTree:
        acc = tree(addends, 0, world_);
        break;
    }
    if (op_ == Op::kMean && !model_.pre_scale_mean) acc = result(acc * scale_);
    return model_.canonicalize_nan ? canonicalize_nan(acc) : acc;
  }

 private:
  float result(float value) const { return model_.flush_subnormal_results ? flush(value) : value; }
  // Ranks first, first + 1, …, wrapping around.
  float chain(const std::vector<float>& v, std::uint32_t first) const {
    float acc = model_.start_from_positive_zero ? result(0.0f + v[first]) : v[first];
    for (std::uint32_t k = 1; k < world_; ++k) acc = result(acc + v[(first + k) % world_]);
    return acc;
  }
  float tree(const std::vector<float>& v, std::uint32_t lo, std::uint32_t hi) const {
    if (hi - lo == 1) return v[lo];
    const std::uint32_t mid = lo + (hi - lo) / 2;
    return result(tree(v, lo, mid) + tree(v, mid, hi));
  }

  const ReducerModel& model_;
  std::uint32_t world_;
  Op op_;
  float scale_;
};

// The reduced arena as rank 0 holds it afterwards (every rank should hold the same).
std::vector<float> reduce(const Arenas& arenas, Op op, const ReducerModel& model) {
  const auto world = static_cast<std::uint32_t>(arenas.size());
  const std::size_t n = arenas[0].size();
  const ElementFold fold(model, world, op);
  std::vector<float> addends(world);
  if (model.dataflow == ReducerModel::Dataflow::kWhole) {
    std::vector<float> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::uint32_t r = 0; r < world; ++r) addends[r] = arenas[r][i];
      out[i] = fold(addends);
    }
    return out;
  }
  // Sharded: rank 0 starts from its own arena; the all-gather overwrites what was reduced.
  std::vector<float> out = arenas[0];
  for (std::uint32_t owner = 0; owner < world; ++owner) {
    Shard shard = shard_of(n, world, owner);
    if (model.dataflow == ReducerModel::Dataflow::kShardEndOffByOne && shard.count > 0) {
      --shard.count;
    }
    if (model.dataflow == ReducerModel::Dataflow::kRemainderForgotten) shard.count = n / world;
    const std::uint32_t dropped =
        model.dataflow == ReducerModel::Dataflow::kPeerDropped && world > 1 ? (owner + 1) % world
                                                                            : world;
    for (std::size_t i = shard.begin; i < shard.end(); ++i) {
      for (std::uint32_t r = 0; r < world; ++r) addends[r] = r == dropped ? 0.0f : arenas[r][i];
      out[i] = fold(addends);
    }
  }
  return out;
}

// The suite's cases small enough to reduce element by element quickly (W × N ≤ 4 Mi), in
// file order.
const std::vector<GoldenEntry>& small_suite() {
  static const std::vector<GoldenEntry> entries = [] {
    const GoldenFile file = read_golden_file(RV_SOURCE_DIR "/golden/fixed-order.xxh128");
    std::vector<GoldenEntry> small;
    for (const GoldenEntry& entry : file.entries) {
      // The binary32 cases: the reducer models here fold binary32 (the half rules have
      // their own oracle tests, tests/reducer/fixed_order_half_test.cc).
      if (entry.id.dtype != DType::kF32) continue;
      if (entry.id.count * entry.id.world <= (std::uint64_t{1} << 22)) small.push_back(entry);
    }
    return small;
  }();
  return entries;
}

Digest model_digest(const GoldenEntry& entry, const ReducerModel& model) {
  const Arenas arenas = generate_case_arenas(entry.id);
  const std::vector<float> reduced = reduce(arenas, entry.id.op, model);
  return digest_floats(reduced.data(), reduced.size());
}

TEST(DetectionPower, SuiteHasEnoughSmallCases) { EXPECT_GE(small_suite().size(), 1000u); }

// The harness itself is right: the correct model reproduces every line, in both dataflows.
TEST(DetectionPower, CorrectReducerReproducesEverySmallCase) {
  ReducerModel whole;
  ReducerModel sharded;
  sharded.dataflow = ReducerModel::Dataflow::kSharded;
  for (const GoldenEntry& entry : small_suite()) {
    ASSERT_EQ(model_digest(entry, whole).hex(), entry.digest.hex())
        << "line " << entry.line << ": " << format_case_id(entry.id);
    if (entry.id.count * entry.id.world <= 100000) {
      ASSERT_EQ(model_digest(entry, sharded).hex(), entry.digest.hex())
          << "sharded, line " << entry.line << ": " << format_case_id(entry.id);
    }
  }
}

ReducerModel wrong(std::string name, void (*configure)(ReducerModel&)) {
  ReducerModel model;
  model.name = std::move(name);
  configure(model);
  return model;
}

std::vector<ReducerModel> wrong_reducers() {
  using A = ReducerModel::Association;
  using D = ReducerModel::Dataflow;
  return {
      wrong("ReversedRankOrder", [](ReducerModel& m) { m.association = A::kReversed; }),
      wrong("PairwiseTree", [](ReducerModel& m) { m.association = A::kPairwiseTree; }),
      wrong("PreScaledMean", [](ReducerModel& m) { m.pre_scale_mean = true; }),
      wrong("FoldFromPositiveZero", [](ReducerModel& m) { m.start_from_positive_zero = true; }),
      wrong("FlushSubnormalInputs", [](ReducerModel& m) { m.flush_subnormal_inputs = true; }),
      wrong("FlushSubnormalResults", [](ReducerModel& m) { m.flush_subnormal_results = true; }),
      wrong("NanPayloadPassedThrough", [](ReducerModel& m) { m.canonicalize_nan = false; }),
      wrong("ShardEndOffByOne", [](ReducerModel& m) { m.dataflow = D::kShardEndOffByOne; }),
      wrong("ShardRemainderForgotten",
            [](ReducerModel& m) { m.dataflow = D::kRemainderForgotten; }),
      wrong("PeerContributionDropped", [](ReducerModel& m) { m.dataflow = D::kPeerDropped; }),
  };
}

class WrongReducer : public ::testing::TestWithParam<ReducerModel> {};

// The first suite line whose digest the model changes, or nullptr.
const GoldenEntry* first_detection(const ReducerModel& model, bool exact_only = false) {
  for (const GoldenEntry& entry : small_suite()) {
    if (exact_only && entry.id.dist != Distribution::kExact) continue;
    if (model_digest(entry, model) != entry.digest) return &entry;
  }
  return nullptr;
}

TEST_P(WrongReducer, ChangesAtLeastOneDigestOfTheSuite) {
  const GoldenEntry* caught = first_detection(GetParam());
  ASSERT_NE(caught, nullptr) << GetParam().name << " reproduces every small line of the suite";
  std::cout << GetParam().name << " caught by line " << caught->line << ": "
            << format_case_id(caught->id) << "\n";
}

INSTANTIATE_TEST_SUITE_P(Suite, WrongReducer, ::testing::ValuesIn(wrong_reducers()),
                         [](const ::testing::TestParamInfo<ReducerModel>& param_info) {
                           return param_info.param.name;
                         });

TEST(DetectionPower, ExactCasesAreBlindToReordering) {
  std::vector<ReducerModel> reorderings(3);
  reorderings[0].association = ReducerModel::Association::kReversed;
  reorderings[1].association = ReducerModel::Association::kPairwiseTree;
  reorderings[2].association = ReducerModel::Association::kRotated;
  std::size_t exact_cases = 0;
  for (const GoldenEntry& entry : small_suite()) {
    if (entry.id.dist != Distribution::kExact) continue;
    ++exact_cases;
    for (const ReducerModel& model : reorderings) {
      ASSERT_EQ(model_digest(entry, model).hex(), entry.digest.hex())
          << "line " << entry.line << ": " << format_case_id(entry.id);
    }
  }
  EXPECT_GE(exact_cases, 200u);
}

TEST(DetectionPower, ExactCasesSeeLostBytes) {
  for (const ReducerModel& model : wrong_reducers()) {
    if (model.dataflow == ReducerModel::Dataflow::kWhole) continue;
    EXPECT_NE(first_detection(model, /*exact_only=*/true), nullptr)
        << model.name << " is invisible to every exact case";
  }
}

}  // namespace
}  // namespace rv
