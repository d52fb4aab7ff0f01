// DistContext: the Single no-op context, and Process contexts over the real launch path
// (job directory rendezvous, Gloo over loopback through its FileStore in the job directory),
// one thread per rank. The reductions must equal the reference fold bit for bit; a rank that
// desynchronises is a named error on every rank, not a hang.
#include "core/launch/dist_context.h"
#include "core/oracle/reference.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/exact/exact_reduction.h"
#include "core/oracle/emulated_world.h"
#include "core/transport/gloo/gloo_transport.h"
#include "tests/support/scratch_dir.h"

namespace rv {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kTimeout{10000};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Opens rank r of a world the way `run` does, with per-rank contract and seed.
DistContext open_rank(const std::string& root, const std::string& job_id, std::uint32_t rank,
                      std::uint32_t world, Contract contract, std::uint64_t seed = 7) {
  LaunchRank launch;
  launch.rank = rank;
  launch.world = world;
  launch.local_rank = rank;
  launch.launcher = "test";
  JobDirectory job = JobDirectory::open(root, job_id, rank, world, kTimeout);
  GlooConnectOptions options;
  options.store_dir = job.gloo_store_dir();
  options.rank = rank;
  options.world = world;
  options.timeout = kTimeout;
  std::unique_ptr<Transport> transport = connect_gloo(options);
  return DistContext::process(launch, std::move(job), std::move(transport),
                              host_fixed_order_device(), contract, kTimeout, seed);
}

// Runs body(rank) on one thread per rank; returns each rank's exception (null if none).
std::vector<std::exception_ptr> run_world(std::uint32_t world,
                                          const std::function<void(std::uint32_t)>& body) {
  std::vector<std::future<void>> ranks;
  for (std::uint32_t r = 0; r < world; ++r) {
    ranks.push_back(std::async(std::launch::async, [&body, r] { body(r); }));
  }
  std::vector<std::exception_ptr> errors;
  for (auto& f : ranks) {
    try {
      f.get();
      errors.push_back(nullptr);
    } catch (...) {
      errors.push_back(std::current_exception());
    }
  }
  return errors;
}

std::string message(const std::exception_ptr& error) {
  if (!error) return "";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "?";
}

void expect_all_ok(const std::vector<std::exception_ptr>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r) {
    EXPECT_EQ(errors[r], nullptr) << "rank " << r << ": " << message(errors[r]);
  }
}

std::vector<std::vector<float>> world_arenas(Distribution dist, std::uint32_t world,
                                             std::size_t n) {
  ArenaSpec spec;
  spec.dist = dist;
  spec.seed = 11;
  std::vector<std::vector<float>> arenas;
  for (std::uint32_t r = 0; r < world; ++r) arenas.push_back(generate_arena(spec, r, n));
  return arenas;
}

TEST(DistContext, SingleIsANoOpWorldOfOne) {
  DistContext context = DistContext::single(3, 42);
  EXPECT_EQ(context.rank(), 0u);
  EXPECT_EQ(context.world_size(), 1u);
  EXPECT_EQ(context.device_ordinal(), 3u);
  EXPECT_TRUE(context.is_leader());
  EXPECT_EQ(context.reduce_contract(), Contract::kFixedOrder);
  EXPECT_EQ(context.seed_law().seed(), 42u);
  EXPECT_EQ(context.job(), nullptr);
  EXPECT_EQ(context.transport(), nullptr);
  const std::vector<int> items = {5, 6, 7};
  EXPECT_EQ(context.shard(items), items);
  std::vector<float> arena = {1.5f, -0.0f, std::numeric_limits<float>::quiet_NaN()};
  const std::vector<float> before = arena;
  context.all_reduce_grad_sum(arena.data(), arena.size());
  context.all_reduce_host_mean(arena.data(), arena.size());
  EXPECT_TRUE(same_bits(arena, before));
  context.barrier();
  EXPECT_TRUE(context.any(true));
  EXPECT_FALSE(context.any(false));
}

class DistContextWorld : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(DistContextWorld, FixedOrderReductionsEqualTheReferenceFoldOnEveryRank) {
  const std::uint32_t world = GetParam();
  test::ScratchDir scratch;
  const std::vector<std::size_t> lengths = {0, 1, 7, 1000};
  const auto errors = run_world(world, [&](std::uint32_t r) {
    DistContext context = open_rank(scratch.path(), "fixed", r, world, Contract::kFixedOrder);
    ASSERT_EQ(context.rank(), r);
    ASSERT_EQ(context.world_size(), world);
    EXPECT_EQ(context.device_ordinal(), r);
    EXPECT_EQ(context.is_leader(), r == 0);
    EXPECT_EQ(context.reduce_contract(), Contract::kFixedOrder);
    EXPECT_EQ(context.seed_law().seed(), 7u);
    for (std::size_t n : lengths) {
      for (Distribution dist : {Distribution::kCancel, Distribution::kSpecial}) {
        const auto arenas = world_arenas(dist, world, n);
        std::vector<float> grad = arenas[r];
        context.all_reduce_grad_sum(grad.data(), n);
        EXPECT_TRUE(same_bits(grad, reference_fixed_order(arenas, Op::kSum)))
            << "grad sum, rank " << r << ", n " << n;
        std::vector<float> host = arenas[r];
        context.all_reduce_host_mean(host.data(), n);
        EXPECT_TRUE(same_bits(host, reference_fixed_order(arenas, Op::kMean)))
            << "host mean, rank " << r << ", n " << n;
      }
      context.barrier();
    }
  });
  expect_all_ok(errors);
}

// The exact contract through the embeddable core: the correctly rounded sum and mean (the
// straight reference of core/exact), on cancelling data where the fold would differ.
TEST_P(DistContextWorld, ExactReductionsEqualTheExactReferenceOnEveryRank) {
  const std::uint32_t world = GetParam();
  test::ScratchDir scratch;
  const auto errors = run_world(world, [&](std::uint32_t r) {
    DistContext context = open_rank(scratch.path(), "exact", r, world, Contract::kExact);
    EXPECT_EQ(context.reduce_contract(), Contract::kExact);
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3000}}) {
      for (Distribution dist : {Distribution::kCancel, Distribution::kSpecial}) {
        const auto arenas = world_arenas(dist, world, n);
        std::vector<float> grad = arenas[r];
        context.all_reduce_grad_sum(grad.data(), n);
        EXPECT_TRUE(same_bits(grad, reference_exact(arenas, Op::kSum)))
            << "grad sum, rank " << r << ", n " << n;
        std::vector<float> host = arenas[r];
        context.all_reduce_host_mean(host.data(), n);
        EXPECT_TRUE(same_bits(host, reference_exact(arenas, Op::kMean)))
            << "host mean, rank " << r << ", n " << n;
      }
    }
  });
  expect_all_ok(errors);
}

TEST_P(DistContextWorld, LibrarySumIsExactOnIntegers) {
  const std::uint32_t world = GetParam();
  test::ScratchDir scratch;
  const auto errors = run_world(world, [&](std::uint32_t r) {
    DistContext context = open_rank(scratch.path(), "library", r, world, Contract::kLibrarySum);
    EXPECT_EQ(context.reduce_contract(), Contract::kLibrarySum);
    const auto arenas = world_arenas(Distribution::kExact, world, 513);
    std::vector<float> grad = arenas[r];
    context.all_reduce_grad_sum(grad.data(), grad.size());
    EXPECT_TRUE(same_bits(grad, reference_fixed_order(arenas, Op::kSum))) << "rank " << r;
    std::vector<float> host = arenas[r];
    context.all_reduce_host_mean(host.data(), host.size());
    EXPECT_TRUE(same_bits(host, reference_fixed_order(arenas, Op::kMean))) << "rank " << r;
  });
  expect_all_ok(errors);
}

TEST_P(DistContextWorld, ShardBarrierAndAny) {
  const std::uint32_t world = GetParam();
  test::ScratchDir scratch;
  std::vector<std::vector<int>> shards(world);
  const auto errors = run_world(world, [&](std::uint32_t r) {
    DistContext context = open_rank(scratch.path(), "any", r, world, Contract::kFixedOrder);
    std::vector<int> global(10);
    for (int k = 0; k < 10; ++k) global[k] = 100 + k;
    shards[r] = context.shard(global);
    for (int g = 0; g < 5; ++g) context.barrier();
    EXPECT_FALSE(context.any(false));
    EXPECT_TRUE(context.any(r == world - 1));  // one rank's flag reaches everyone
    EXPECT_TRUE(context.any(true));
    // The leader closes the directory when its context goes: nobody can join it later.
    if (r == 0) {
      const std::string closed = context.job()->file(kClosedFile);
      context.barrier();
      { DistContext gone = std::move(context); }
      EXPECT_TRUE(test::ScratchDir::read(closed).rfind("finished", 0) == 0);
    } else {
      context.barrier();
    }
  });
  expect_all_ok(errors);
  // Item k went to rank k mod W; together the shards are the global order, each item once.
  std::vector<int> seen;
  for (std::uint32_t r = 0; r < world; ++r) {
    for (std::size_t i = 0; i < shards[r].size(); ++i) {
      EXPECT_EQ(shards[r][i], 100 + static_cast<int>(r + i * world));
      seen.push_back(shards[r][i]);
    }
  }
  EXPECT_EQ(seen.size(), 10u);
}

INSTANTIATE_TEST_SUITE_P(Worlds, DistContextWorld, ::testing::Values(1u, 2u, 3u, 4u),
                         [](const auto& param_info) {
                           return "W" + std::to_string(param_info.param);
                         });

TEST(DistContext, ARankWithAnotherLengthIsANamedErrorOnEveryRank) {
  test::ScratchDir scratch;
  const auto errors = run_world(3, [&](std::uint32_t r) {
    DistContext context = open_rank(scratch.path(), "length", r, 3, Contract::kFixedOrder);
    std::vector<float> arena(r == 1 ? 8 : 7, 1.0f);
    context.all_reduce_grad_sum(arena.data(), arena.size());
  });
  for (std::uint32_t r = 0; r < 3; ++r) {
    const std::string text = message(errors[r]);
    EXPECT_NE(text.find("ranks 0, 2 have DistContext collective #0: grad-sum n=7"),
              std::string::npos)
        << "rank " << r << ": " << text;
    EXPECT_NE(text.find("rank 1 has DistContext collective #0: grad-sum n=8"), std::string::npos)
        << "rank " << r << ": " << text;
  }
}

TEST(DistContext, ARankThatSkipsACollectiveIsANamedErrorOnEveryRank) {
  test::ScratchDir scratch;
  const auto errors = run_world(2, [&](std::uint32_t r) {
    DistContext context = open_rank(scratch.path(), "skip", r, 2, Contract::kFixedOrder);
    std::vector<float> arena(16, 1.0f);
    // Rank 1 skips the per-item reduction of the tail (the shard() warning) and goes on to
    // the next collective.
    if (r == 0) context.all_reduce_grad_sum(arena.data(), arena.size());
    context.any(false);
  });
  for (std::uint32_t r = 0; r < 2; ++r) {
    EXPECT_NE(message(errors[r]).find("ranks disagree"), std::string::npos)
        << "rank " << r << ": " << message(errors[r]);
  }
}

TEST(DistContext, RanksWithDifferentContractsOrSeedsRefuseToStart) {
  test::ScratchDir scratch;
  const auto contracts = run_world(2, [&](std::uint32_t r) {
    open_rank(scratch.path(), "contracts", r, 2,
              r == 0 ? Contract::kFixedOrder : Contract::kLibrarySum);
  });
  for (std::uint32_t r = 0; r < 2; ++r) {
    EXPECT_NE(message(contracts[r]).find("contract=library-sum"), std::string::npos)
        << message(contracts[r]);
  }
  const auto seeds = run_world(2, [&](std::uint32_t r) {
    open_rank(scratch.path(), "seeds", r, 2, Contract::kFixedOrder, r == 0 ? 1 : 2);
  });
  for (std::uint32_t r = 0; r < 2; ++r) {
    EXPECT_NE(message(seeds[r]).find("seed=2"), std::string::npos) << message(seeds[r]);
  }
}

TEST(DistContext, MismatchedPartsAreRefused) {
  test::ScratchDir scratch;
  JobDirectory job = JobDirectory::open(scratch.path(), "parts", 0, 1, kTimeout);
  GlooConnectOptions options;
  options.store_dir = job.gloo_store_dir();
  LaunchRank launch;
  launch.world = 2;  // the launcher says 2, the job directory and the transport say 1
  EXPECT_THROW(DistContext::process(launch, job, connect_gloo(options), host_fixed_order_device(),
                                    Contract::kFixedOrder, kTimeout),
               InputError);
  EXPECT_THROW(DistContext::process(LaunchRank{}, job, nullptr, host_fixed_order_device(),
                                    Contract::kFixedOrder, kTimeout),
               InputError);
}

}  // namespace
}  // namespace rv
