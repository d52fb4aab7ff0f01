// CudaExactDevice: the host paths' bits through the ExactDevice interface (plans that change
// between calls included), and the exact reducer running on it over a transport that stands
// for W identical ranks, against the straight reference.
#include "core/cuda/exact/cuda_exact_device.h"
#include "core/oracle/reference.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_reduction.h"
#include "core/exact/host_exact.h"
#include "core/reducer/exact_reducer.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using test::same_bits;

// W ranks that all hold this rank's data, seen from rank 0: an all-gather replicates, the
// int64 sum multiplies by W (the combine kernel over a zero stride, on the device's
// stream) and the max changes nothing. So the reducer's result must be the exact sum (or
// mean) of W copies of the arena: the reducer's whole dataflow over a world of W, with
// limbs of limb_bits(W), in one process.
class IdenticalRanksTransport final : public Transport {
 public:
  IdenticalRanksTransport(std::uint32_t world, CudaFixedOrderDevice& device)
      : world_(world), device_(device) {}
  std::uint32_t rank() const override { return 0; }
  std::uint32_t world_size() const override { return world_; }
  std::string name() const override { return "identical-ranks"; }
  std::string library_version() const override { return "none (a test transport)"; }
  void all_gather(const void* in, void* out, std::size_t bytes) override {
    for (std::uint32_t r = 0; r < world_; ++r) {
      std::memcpy(static_cast<char*>(out) + r * bytes, in, bytes);
    }
  }
  void exchange(const ExchangePlan&) override {
    throw InternalError("identical-ranks transport: exchange is not used by the exact reducer");
  }
  void broadcast(void*, std::size_t, std::uint32_t) override {}
  void barrier() override {}
  void library_sum(float*, std::size_t) override {
    throw InternalError("identical-ranks transport: no library sum");
  }
  std::int64_t max_int(std::int64_t value) override { return value; }
  void all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) override {
    ++int64_calls_;
    if (op == IntReduction::kSum) {
      launch_combine_words(values, world_, 0, n, IntReduction::kSum, values, device_.stream());
    }
    device_.synchronize();
  }
  int int64_calls() const { return int64_calls_; }

 private:
  std::uint32_t world_;
  CudaFixedOrderDevice& device_;
  int int64_calls_ = 0;
};

std::vector<float> reduce_on_gpu(ExactReducer& reducer, CudaFixedOrderDevice& device,
                                 const std::vector<float>& arena, Op op) {
  float* d_arena = device.allocate(arena.size());
  device.upload(d_arena, arena.data(), arena.size() * sizeof(float));
  reducer.all_reduce(d_arena, arena.size(), op);
  std::vector<float> out(arena.size());
  device.download(out.data(), d_arena, out.size() * sizeof(float));
  device.free(d_arena);
  return out;
}

TEST(CudaExactDevice, ExactReducerOverIdenticalRanksEqualsReference) {
  RV_SKIP_WITHOUT_GPU();
  CudaFixedOrderDevice fixed_order_device(0);
  CudaExactDevice exact_device(fixed_order_device);
  for (std::uint32_t world : {1u, 3u, 8u, 256u}) {
    IdenticalRanksTransport transport(world, fixed_order_device);
    for (std::size_t n :
         {std::size_t{1}, std::size_t{1025}, std::size_t{3 * 1024 + 77}, std::size_t{100003}}) {
      if (world == 256 && n > 10000) continue;  // the reference's cost: W × n wide additions
      for (Distribution dist : kAllDistributions) {
        const std::vector<float> arena =
            generate_arena(ArenaSpec{kLatestGenerator, dist, 5 + n}, 0, n);
        const std::vector<std::vector<float>> copies(world, arena);
        for (Op op : {Op::kSum, Op::kMean}) {
          const std::vector<float> expected = reference_exact(copies, op);
          // The whole arena in one sum round (a GPU's default), and in pieces of two blocks.
          for (std::size_t piece : {std::size_t{0}, std::size_t{2048}}) {
            ExactOptions options;
            options.piece_elements = piece;
            ExactReducer reducer(transport, exact_device, options);
            const int calls_before = transport.int64_calls();
            EXPECT_TRUE(same_bits(expected, reduce_on_gpu(reducer, fixed_order_device, arena, op)))
                << "W=" << world << " n=" << n << " " << to_string(dist) << " " << to_string(op)
                << " piece " << piece;
            const std::size_t pieces = piece == 0 ? 1 : (n + piece - 1) / piece;
            EXPECT_EQ(transport.int64_calls() - calls_before, static_cast<int>(1 + pieces));
            EXPECT_EQ(reducer.last_traffic().agreement_words,
                      exact_block_count(n) * exact::kAgreementWords);
          }
        }
      }
    }
  }
}

TEST(CudaExactDevice, PlansThatChangeBetweenCallsAreUploadedAgain) {
  RV_SKIP_WITHOUT_GPU();
  CudaFixedOrderDevice fixed_order_device(0);
  CudaExactDevice exact_device(fixed_order_device);
  EXPECT_STREQ(exact_device.name(), fixed_order_device.name());
  // A GPU sums in pieces of 16 Mi elements (large messages, bounded scratch).
  EXPECT_EQ(ExactOptions::for_device(exact_device).piece_elements, std::size_t{1} << 24);

  struct Case {
    std::vector<float> values;
    ExactPlan plan;
    std::vector<std::int64_t> digits;  // the host's
    float* d_values = nullptr;
    std::int64_t* d_words = nullptr;
    float* d_out = nullptr;
  };
  std::vector<Case> cases(3);
  const Distribution dists[] = {Distribution::kWide, Distribution::kNormal, Distribution::kSpecial};
  const std::size_t lengths[] = {5000, 3 * 1024 + 77, 2048};
  for (std::size_t c = 0; c < cases.size(); ++c) {
    Case& k = cases[c];
    k.values = generate_arena(ArenaSpec{kLatestGenerator, dists[c], 3}, 1, lengths[c]);
    k.d_values = fixed_order_device.allocate(k.values.size());
    fixed_order_device.upload(k.d_values, k.values.data(), k.values.size() * sizeof(float));
    // The agreement words through the device, the plan on the host.
    std::int64_t* d_agreement =
        exact_device.allocate_words(exact_block_count(k.values.size()) * exact::kAgreementWords);
    exact_device.agreement_words(k.d_values, k.values.size(), d_agreement);
    std::vector<std::int64_t> agreed(exact_block_count(k.values.size()) * exact::kAgreementWords);
    exact_device.download_words(agreed.data(), d_agreement, agreed.size());
    exact_device.free_words(d_agreement);
    std::vector<std::int64_t> host_agreed(agreed.size());
    exact_agreement_words(k.values.data(), k.values.size(), host_agreed.data());
    EXPECT_EQ(agreed, host_agreed) << "agreement words, case " << c;
    k.plan = plan_exact_blocks(agreed.data(), k.values.size(), 1u << c);
    k.digits.resize(k.plan.words);
    exact_encode(k.values.data(), k.plan, k.digits.data());
    k.d_words = exact_device.allocate_words(k.plan.words);
    k.d_out = fixed_order_device.allocate(k.values.size());
  }
  // Encodes in one order, rounds in another: every call names a plan other than the last.
  for (Case& k : cases) exact_device.encode(k.d_values, k.plan, k.d_words);
  for (std::size_t c : {2u, 0u, 1u}) {
    Case& k = cases[c];
    std::vector<std::int64_t> words(k.plan.words);
    exact_device.download_words(words.data(), k.d_words, words.size());
    EXPECT_EQ(words, k.digits) << "digits, case " << c;
    for (Op op : {Op::kSum, Op::kMean}) {
      exact_device.round(k.d_words, k.plan, op, k.d_out, DType::kF32);
      exact_device.synchronize();
      std::vector<float> expected(k.values.size()), out(k.values.size());
      exact_round(k.digits.data(), k.plan, op, expected.data());
      fixed_order_device.download(out.data(), k.d_out, out.size() * sizeof(float));
      EXPECT_TRUE(same_bits(expected, out)) << "case " << c << " " << to_string(op);
    }
  }
  for (Case& k : cases) {
    fixed_order_device.free(k.d_values);
    fixed_order_device.free(k.d_out);
    exact_device.free_words(k.d_words);
  }
}

}  // namespace
}  // namespace rv
