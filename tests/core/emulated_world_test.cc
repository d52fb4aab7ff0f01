// EmulatedWorld (docs/DESIGN.md §5): the sharded owner dataflow must equal the straight reference
// fold bit for bit under every delivery order — exhaustively for small worlds, under many
// seeded shuffles up to W = 64 — with uneven and empty shards. The data is order-sensitive
// (a fold in arrival order would differ), so an implementation that folded in arrival order
// or misplaced a copy would fail here.
#include "core/oracle/emulated_world.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/error.h"
#include "core/fold_law.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/reference.h"

namespace rv {
namespace {

using Arenas = std::vector<std::vector<float>>;

Arenas make_arenas(std::uint32_t w, std::size_t n, Distribution dist, std::uint64_t seed) {
  Arenas arenas;
  for (std::uint32_t r = 0; r < w; ++r) arenas.push_back(generate_arena({1, dist, seed}, r, n));
  return arenas;
}

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits;
  for (float v : values) bits.push_back(float_bits(v));
  return bits;
}

// Counts that give uneven shards, empty shards (N < W) and an empty arena.
std::vector<std::size_t> counts_for(std::uint32_t w) {
  std::vector<std::size_t> counts = {0, 1, w + std::size_t{1}, 2 * std::size_t{w} + 3, 1000};
  if (w > 2) counts.push_back(w - 1);
  return counts;
}

std::string describe(std::uint32_t w, std::size_t n, Op op, const DeliveryOrders& orders) {
  std::string text = "W=" + std::to_string(w) + " n=" + std::to_string(n) +
                     " op=" + std::string(to_string(op)) + " orders=";
  for (const auto& order : orders) {
    text += "[";
    for (std::uint32_t r : order) text += std::to_string(r) + " ";
    text += "]";
  }
  return text;
}

// Every rank's arena after the emulated all-reduce equals the reference, bit for bit.
::testing::AssertionResult emulated_equals_reference(const Arenas& inputs, Op op,
                                                     const DeliveryOrders& orders) {
  const auto w = static_cast<std::uint32_t>(inputs.size());
  const std::vector<float> reference = reference_fixed_order(inputs, op);
  Arenas arenas = inputs;
  EmulatedWorld(w).all_reduce(arenas, op, orders);
  for (std::uint32_t r = 0; r < w; ++r) {
    for (std::size_t i = 0; i < reference.size(); ++i) {
      if (float_bits(arenas[r][i]) != float_bits(reference[i])) {
        return ::testing::AssertionFailure()
               << describe(w, reference.size(), op, orders) << ": rank " << r << " element " << i
               << " has bits 0x" << std::hex << float_bits(arenas[r][i]) << ", the reference 0x"
               << float_bits(reference[i]);
      }
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<std::vector<std::uint32_t>> all_permutations(std::uint32_t w) {
  std::vector<std::uint32_t> order(w);
  std::iota(order.begin(), order.end(), 0u);
  std::vector<std::vector<std::uint32_t>> all;
  do {
    all.push_back(order);
  } while (std::next_permutation(order.begin(), order.end()));
  return all;
}

constexpr Distribution kOrderSensitive[] = {Distribution::kCancel, Distribution::kSpecial,
                                            Distribution::kNormal};

TEST(EmulatedWorld, EveryUniformPermutationUpToFiveRanks) {
  for (std::uint32_t w = 1; w <= 5; ++w) {
    const auto permutations = all_permutations(w);
    for (std::size_t n : counts_for(w)) {
      for (Distribution dist : kOrderSensitive) {
        const Arenas inputs = make_arenas(w, n, dist, 3);
        for (Op op : {Op::kSum, Op::kMean}) {
          for (const auto& permutation : permutations) {
            const DeliveryOrders orders(w, permutation);
            ASSERT_TRUE(emulated_equals_reference(inputs, op, orders));
          }
        }
      }
    }
  }
}

TEST(EmulatedWorld, EveryPerOwnerCombinationUpToFourRanks) {
  // Each owner independently receives in any order: the full product of permutations.
  for (std::uint32_t w = 1; w <= 4; ++w) {
    const auto permutations = all_permutations(w);
    std::size_t combinations = 1;
    for (std::uint32_t p = 0; p < w; ++p) combinations *= permutations.size();
    const std::size_t n = 2 * w + 1;  // uneven shards, every owner holds some
    const Arenas inputs = make_arenas(w, n, Distribution::kCancel, 5);
    for (std::size_t c = 0; c < combinations; ++c) {
      DeliveryOrders orders(w);
      std::size_t digits = c;
      for (std::uint32_t p = 0; p < w; ++p) {
        orders[p] = permutations[digits % permutations.size()];
        digits /= permutations.size();
      }
      ASSERT_TRUE(emulated_equals_reference(inputs, Op::kSum, orders));
    }
  }
}

TEST(EmulatedWorld, PerOwnerPermutationsOfFiveRanks) {
  // Owner p takes permutation k, the others a seeded shuffle: every permutation appears at
  // every owner.
  const std::uint32_t w = 5;
  const auto permutations = all_permutations(w);
  for (std::size_t n : counts_for(w)) {
    const Arenas inputs = make_arenas(w, n, Distribution::kCancel, 9);
    for (std::uint32_t owner = 0; owner < w; ++owner) {
      for (std::size_t k = 0; k < permutations.size(); ++k) {
        DeliveryOrders orders = shuffled_delivery_orders(w, 17, k);
        orders[owner] = permutations[k];
        ASSERT_TRUE(emulated_equals_reference(inputs, k % 2 ? Op::kMean : Op::kSum, orders));
      }
    }
  }
}

TEST(EmulatedWorld, ManyShuffledOrdersUpToSixtyFourRanks) {
  for (std::uint32_t w : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 13u, 16u, 31u, 32u, 33u, 64u}) {
    for (std::size_t n : counts_for(w)) {
      for (Distribution dist : kOrderSensitive) {
        const Arenas inputs = make_arenas(w, n, dist, w * 31 + n);
        for (std::uint64_t trial = 0; trial < 12; ++trial) {
          const Op op = trial % 2 ? Op::kMean : Op::kSum;
          ASSERT_TRUE(
              emulated_equals_reference(inputs, op, shuffled_delivery_orders(w, 99 + n, trial)));
        }
      }
    }
  }
}

TEST(EmulatedWorld, AscendingDefaultEqualsReference) {
  for (std::uint32_t w : {1u, 3u, 64u}) {
    for (std::size_t n : counts_for(w)) {
      ASSERT_TRUE(
          emulated_equals_reference(make_arenas(w, n, Distribution::kWide, 1), Op::kSum, {}));
    }
  }
}

// The same data folded in arrival order (the bug the rank-indexed table prevents) gives
// other bits: the tests above could fail.
TEST(EmulatedWorld, DataIsSensitiveToArrivalOrder) {
  for (std::uint32_t w = 3; w <= 5; ++w) {
    const Arenas inputs = make_arenas(w, 1000, Distribution::kCancel, 3);
    const std::vector<float> reference = reference_fixed_order(inputs, Op::kSum);
    bool some_order_differs = false;
    for (const auto& permutation : all_permutations(w)) {
      for (std::size_t i = 0; i < reference.size() && !some_order_differs; ++i) {
        volatile float acc = inputs[permutation[0]][i];
        for (std::uint32_t k = 1; k < w; ++k) acc = acc + inputs[permutation[k]][i];
        some_order_differs = float_bits(canonicalize_nan(acc)) != float_bits(reference[i]);
      }
    }
    EXPECT_TRUE(some_order_differs) << "W=" << w << ": cancel data must be order-sensitive";
  }
}

TEST(ShuffledDeliveryOrders, ArePermutationsDeterministicAndVaried) {
  for (std::uint32_t w : {1u, 2u, 5u, 64u, 256u}) {
    std::size_t non_identity = 0;
    for (std::uint64_t trial = 0; trial < 10; ++trial) {
      const DeliveryOrders orders = shuffled_delivery_orders(w, 42, trial);
      ASSERT_EQ(orders.size(), w);
      EXPECT_EQ(orders, shuffled_delivery_orders(w, 42, trial)) << "a pure function of its inputs";
      for (const auto& order : orders) {
        std::vector<std::uint32_t> sorted = order;
        std::sort(sorted.begin(), sorted.end());
        std::vector<std::uint32_t> identity(w);
        std::iota(identity.begin(), identity.end(), 0u);
        ASSERT_EQ(sorted, identity) << "W=" << w << " trial " << trial;
        non_identity += order != identity;
      }
    }
    if (w >= 5) {
      EXPECT_GT(non_identity, 0u) << "W=" << w << ": the shuffles must shuffle";
    }
  }
  EXPECT_NE(shuffled_delivery_orders(8, 42, 1), shuffled_delivery_orders(8, 42, 2));
  EXPECT_NE(shuffled_delivery_orders(8, 42, 1), shuffled_delivery_orders(8, 43, 1));
}

TEST(EmulatedWorld, BadDeliveryOrdersAreInputErrors) {
  const std::uint32_t w = 4;
  const Arenas inputs = make_arenas(w, 10, Distribution::kExact, 1);
  const std::vector<std::uint32_t> ascending = {0, 1, 2, 3};
  const DeliveryOrders bad[] = {
      DeliveryOrders(3, ascending),                              // one owner short
      DeliveryOrders(5, ascending),                              // one owner too many
      {ascending, ascending, {0, 1, 2}, ascending},              // an order too short
      {ascending, {0, 1, 2, 3, 0}, ascending, ascending},        // an order too long
      {ascending, ascending, {0, 1, 1, 3}, ascending},           // a repeated rank
      {ascending, ascending, ascending, {0, 1, 2, 4}},           // a rank out of range
      {{3, 2, 1, 0}, ascending, ascending, {0, 1, 2, 4000000}},  // far out of range
  };
  for (const DeliveryOrders& orders : bad) {
    Arenas arenas = inputs;
    EXPECT_THROW(EmulatedWorld(w).all_reduce(arenas, Op::kSum, orders), InputError)
        << describe(w, 10, Op::kSum, orders);
    EXPECT_EQ(arenas, inputs) << "a rejected call must not touch the arenas";
  }
}

TEST(EmulatedWorld, BadArenasAreInputErrors) {
  EXPECT_THROW(EmulatedWorld(0), InputError);
  Arenas three = make_arenas(3, 10, Distribution::kExact, 1);
  EXPECT_THROW(EmulatedWorld(4).all_reduce(three, Op::kSum), InputError);
  three[2].pop_back();
  EXPECT_THROW(EmulatedWorld(3).all_reduce(three, Op::kSum), InputError);
  EXPECT_THROW(reference_fixed_order(three, Op::kSum), InputError);
  EXPECT_THROW(reference_fixed_order({}, Op::kSum), InputError);
}

// The one expectation for raw inputs (`run --inputs`, `digest --inputs`) is the straight
// reference of the contract asked for, which EmulatedWorld's dataflow equals; the two
// contracts differ on this data, so a swapped or defaulted contract fails here.
TEST(Oracle, ExpectedReductionIsTheContractsStraightReference) {
  bool contracts_differ = false;
  for (std::uint32_t w : {1u, 3u, 7u}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{1000}}) {
      for (Distribution dist : kAllDistributions) {
        for (Op op : {Op::kSum, Op::kMean}) {
          const Arenas inputs = make_arenas(w, n, dist, 31 + n);
          const std::vector<float> fixed = expected_reduction(inputs, Contract::kFixedOrder, op);
          const std::vector<float> exact = expected_reduction(inputs, Contract::kExact, op);
          Arenas emulated = inputs, emulated_exact = inputs;
          EmulatedWorld(w).all_reduce(emulated, op, shuffled_delivery_orders(w, 3, n));
          EmulatedWorld(w).all_reduce_exact(emulated_exact, op);
          const std::string what = describe(w, n, op, {}) + " " + std::string(to_string(dist));
          EXPECT_EQ(bits_of(fixed), bits_of(reference_fixed_order(inputs, op))) << what;
          EXPECT_EQ(bits_of(fixed), bits_of(emulated[0])) << what;
          EXPECT_EQ(bits_of(exact), bits_of(reference_exact(inputs, op))) << what;
          EXPECT_EQ(bits_of(exact), bits_of(emulated_exact[w - 1])) << what;
          contracts_differ = contracts_differ || bits_of(fixed) != bits_of(exact);
        }
      }
    }
  }
  EXPECT_TRUE(contracts_differ) << "the data must tell the two contracts apart";
  EXPECT_THROW(expected_reduction(make_arenas(2, 4, Distribution::kNormal, 1),
                                  Contract::kLibrarySum, Op::kSum),
               InputError);
  EXPECT_THROW(expected_reduction({}, Contract::kExact, Op::kSum), InputError);
}

// The streaming re-derivation `check` uses (blocks of 16 Ki elements) gives the reference's
// bits across its block boundaries.
TEST(CaseReduction, StreamingEqualsReferenceFold) {
  for (std::uint64_t n :
       {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{16384}, std::uint64_t{40001}}) {
    for (Distribution dist : kAllDistributions) {
      CaseId id;
      id.op = n % 2 ? Op::kMean : Op::kSum;
      id.world = 3;
      id.count = n;
      id.dist = dist;
      id.seed = 8;
      const std::vector<float> reference = reference_fixed_order(generate_case_arenas(id), id.op);
      std::vector<float> streamed;
      stream_reference_reduction(id, [&](const float* values, std::size_t count) {
        streamed.insert(streamed.end(), values, values + count);
      });
      ASSERT_EQ(streamed.size(), reference.size());
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(float_bits(streamed[i]), float_bits(reference[i]))
            << format_case_id(id) << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace rv
