// The NCCL transport on one GPU: a world of one joins, moves bytes (exchange, all-gather,
// broadcast), runs the fixed-order dataflow with our kernel and NCCL's own sum, and
// finalizes; a world whose second rank never arrives ends in a named DeadlineExceeded within
// its deadline, never a hang. Runs against whichever libnccl.so.2 the loader finds
// (LD_LIBRARY_PATH picks it: ci/device/run-on-h200.sh runs this under each NCCL).
#include "core/transport/nccl/nccl_transport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/error.h"
#include "core/fold.h"
#include "core/oracle/emulated_world.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/scratch_dir.h"

namespace rv {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using test::same_bits;

#define RV_SKIP_WITHOUT_NCCL()                                           \
  do {                                                                   \
    try {                                                                \
      std::cout << "using " << NcclLibrary::load().describe() << "\n";   \
    } catch (const RuntimeFailure& e) {                                  \
      GTEST_SKIP() << "no NCCL on this box's loader path: " << e.what(); \
    }                                                                    \
  } while (false)

NcclConnectOptions options_for(const test::ScratchDir& dir, std::uint32_t rank, std::uint32_t world,
                               milliseconds timeout) {
  NcclConnectOptions options;
  options.job_dir = dir.path();
  options.job_nonce = "0123456789abcdef0123456789abcdef";
  options.rank = rank;
  options.world = world;
  options.device = 0;
  options.timeout = timeout;
  return options;
}

TEST(NcclTransport, BadOptionsAreInputErrors) {
  const test::ScratchDir dir;
  auto options = options_for(dir, 0, 1, milliseconds(1000));
  options.world = 0;
  EXPECT_THROW(connect_nccl(options), InputError);
  options = options_for(dir, 2, 2, milliseconds(1000));
  EXPECT_THROW(connect_nccl(options), InputError);
  options = options_for(dir, 0, 1, milliseconds(1000));
  options.job_dir.clear();
  EXPECT_THROW(connect_nccl(options), InputError);
}

TEST(NcclTransport, ARankWhoseRankZeroNeverPublishesTimesOutOnTheId) {
  RV_SKIP_WITHOUT_NCCL();
  const test::ScratchDir dir;
  const auto started = Clock::now();
  try {
    connect_nccl(options_for(dir, 1, 2, milliseconds(500)));
    FAIL() << "joined a world without a rank 0";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 of 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unique id"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - started, milliseconds(3000));
}

class NcclOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    RV_SKIP_WITHOUT_GPU();
    RV_SKIP_WITHOUT_NCCL();
  }
};

TEST_F(NcclOnGpu, AWorldOfOneMovesBytesReducesAndFinalizes) {
  const test::ScratchDir dir;
  CudaFixedOrderDevice device(0);
  auto options = options_for(dir, 0, 1, milliseconds(60000));
  options.stream = device.stream();
  const auto joined = Clock::now();
  std::unique_ptr<Transport> nccl = connect_nccl(options);
  std::cout << "init took "
            << std::chrono::duration_cast<milliseconds>(Clock::now() - joined).count() << " ms\n";
  EXPECT_EQ(nccl->name(), "nccl");
  EXPECT_EQ(nccl->rank(), 0u);
  EXPECT_EQ(nccl->world_size(), 1u);
  EXPECT_EQ(nccl->library_version().rfind("NCCL 2.", 0), 0u) << nccl->library_version();

  const std::size_t n = 4099;
  const std::vector<float> arena =
      generate_arena(ArenaSpec{kLatestGenerator, Distribution::kSpecial, 8}, 0, n);
  DeviceBuffer d_arena(0, n * sizeof(float));
  DeviceBuffer d_other(0, (n + 8) * sizeof(float));
  d_arena.upload_floats(arena);

  // Byte movement: every call returns with its bytes landed.
  nccl->all_gather(d_arena.data(), d_other.data(), n * sizeof(float));
  EXPECT_TRUE(same_bits(arena, d_other.download_floats(n)));
  nccl->broadcast(d_other.data(), n * sizeof(float), 0);
  EXPECT_TRUE(same_bits(arena, d_other.download_floats(n)));
  ExchangePlan plan;
  plan.send = d_arena.data();
  plan.send_offset = {4};
  plan.send_bytes = {(n - 1) * sizeof(float)};
  plan.recv = d_other.data();
  plan.recv_offset = {8 * sizeof(float)};
  plan.recv_bytes = {(n - 1) * sizeof(float)};
  nccl->exchange(plan);
  EXPECT_TRUE(same_bits(std::vector<float>(arena.begin() + 1, arena.end()),
                        d_other.download_floats(n - 1, 8)));
  nccl->barrier();
  EXPECT_EQ(nccl->max_int(42), 42);
  EXPECT_EQ(nccl->max_int(-7), -7);

  // Fixed-order over NCCL: bytes by NCCL, arithmetic by our kernel, equal to the contract.
  for (Op op : {Op::kSum, Op::kMean}) {
    d_arena.upload_floats(arena);
    float* scratch = device.allocate(n);
    ExchangePlan own;
    own.send = d_arena.data();
    own.send_offset = {0};
    own.send_bytes = {n * sizeof(float)};
    own.recv = scratch;
    own.recv_offset = {0};
    own.recv_bytes = {n * sizeof(float)};
    nccl->exchange(own);
    device.fold_stacked(scratch, 1, n, n, op, scratch);
    nccl->all_gather(scratch, d_arena.data(), n * sizeof(float));
    device.synchronize();
    std::vector<std::vector<float>> expected = {arena};
    EmulatedWorld(1).all_reduce(expected, op);
    EXPECT_TRUE(same_bits(expected[0], d_arena.download_floats(n))) << to_string(op);
    device.free(scratch);
  }

  // Library-sum: NCCL's sum, then our finish (of one rank, the sum is the addend).
  d_arena.upload_floats(arena);
  nccl->library_sum(d_arena.floats(), n);
  device.finish_library_sum(d_arena.floats(), n, 1, Op::kMean);
  device.synchronize();
  std::vector<float> expected = arena;
  finish_library_sum(expected.data(), n, 1, Op::kMean);
  EXPECT_TRUE(same_bits(expected, d_arena.download_floats(n)));

  const auto closing = Clock::now();
  nccl.reset();  // finalize + destroy
  EXPECT_LT(Clock::now() - closing, milliseconds(60000));
}

TEST_F(NcclOnGpu, ATransportWithItsOwnStreamWaitsForTheDevice) {
  const test::ScratchDir dir;
  std::unique_ptr<Transport> nccl = connect_nccl(options_for(dir, 0, 1, milliseconds(60000)));
  const std::vector<float> values(1000, 1.5f);
  DeviceBuffer in(0, values.size() * sizeof(float)), out(0, values.size() * sizeof(float));
  in.upload_floats(values);
  nccl->all_gather(in.data(), out.data(), values.size() * sizeof(float));
  EXPECT_TRUE(same_bits(values, out.download_floats(values.size())));
}

// Last in this file: the aborted communicator's threads must not disturb the tests above.
TEST_F(NcclOnGpu, ASecondRankThatNeverArrivesIsANamedDeadline) {
  const test::ScratchDir dir;
  const milliseconds timeout(3000);
  const auto started = Clock::now();
  try {
    connect_nccl(options_for(dir, 0, 2, timeout));
    FAIL() << "a world of two formed with one rank";
  } catch (const DeadlineExceeded& e) {
    const std::string what = e.what();
    std::cout << "error: " << what << "\n";
    EXPECT_NE(what.find("rank 0 of 2"), std::string::npos) << what;
    EXPECT_NE(what.find("init"), std::string::npos) << what;
    EXPECT_NE(what.find("aborted"), std::string::npos) << what;
  }
  const auto waited = Clock::now() - started;
  std::cout << "ended after " << std::chrono::duration_cast<milliseconds>(waited).count()
            << " ms\n";
  EXPECT_GE(waited, timeout);
  // The deadline plus the abort's grace at most (an abort normally takes milliseconds).
  EXPECT_LT(waited, timeout + milliseconds(12000));
}

}  // namespace
}  // namespace rv
