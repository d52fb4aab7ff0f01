// The exact kernels against core/exact/host_exact.h, bit for bit: every distribution, W from
// 1 to 256, lengths around the block size (0, 1, 1023, 1024, 1025, 3·1024 + 77, 2^20), both
// ops, both mean divisions and both limb-width kernels, aligned and unaligned buffers.
// Outputs are poisoned before each launch and guard words after them must stay untouched,
// so a word written twice, missed or written out of range shows up. The reciprocal behind
// the fast mean is checked on the host over every divisor's edge dividends (no GPU needed).
#include "core/cuda/exact_kernel.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/cuda/device_buffer.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_plan.h"
#include "core/exact/host_exact.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using detail::LimbWidth;
using detail::MeanDivision;
using test::same_bits;

constexpr int kDevice = 0;
constexpr std::uint32_t kWorlds[] = {1, 2, 3, 8, 64, 256};
constexpr std::size_t kCounts[] = {0, 1, 1023, 1024, 1025, 3 * 1024 + 77, std::size_t{1} << 20};
// Distinct arenas per case: rank r of a world of W holds arena r mod kDistinctRanks, so the
// summed digits of W = 256 ranks are as large as a real world's while the host work stays
// that of three ranks.
constexpr std::uint32_t kDistinctRanks = 3;
constexpr std::size_t kGuard = 4;  // words (or floats) after every output
constexpr unsigned char kPoisonByte = 0x5A;

::testing::AssertionResult same_words(const std::vector<std::int64_t>& expected,
                                      const std::vector<std::int64_t>& actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure()
           << "sizes differ: " << expected.size() << " vs " << actual.size();
  }
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] != actual[i] && differing++ == 0) first = i;
  }
  if (differing == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << differing << " of " << expected.size() << " words differ; first at " << first
         << ": expected " << expected[first] << ", got " << actual[first];
}

bool all_poison(const void* bytes, std::size_t count) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (std::size_t i = 0; i < count; ++i) {
    if (p[i] != kPoisonByte) return false;
  }
  return true;
}

// Device memory holding `host` at an offset of `offset` elements, poisoned around it.
template <typename T>
DeviceBuffer upload_at(const std::vector<T>& host, std::size_t offset) {
  DeviceBuffer buffer(kDevice, (offset + host.size() + kGuard) * sizeof(T));
  buffer.fill_bytes(kPoisonByte);
  buffer.upload(host.data(), host.size() * sizeof(T), offset * sizeof(T));
  return buffer;
}

template <typename T>
T* at(const DeviceBuffer& buffer, std::size_t offset) {
  return static_cast<T*>(buffer.data()) + offset;
}

// The output of a launch: `count` elements at `offset`, then kGuard guard elements that must
// still hold poison.
template <typename T>
struct Output {
  std::vector<T> values;
  bool guards_intact = true;
};

template <typename T>
Output<T> download_output(const DeviceBuffer& buffer, std::size_t offset, std::size_t count) {
  std::vector<T> all(offset + count + kGuard);
  buffer.download(all.data(), all.size() * sizeof(T));
  Output<T> out;
  out.values.assign(all.begin() + static_cast<std::ptrdiff_t>(offset),
                    all.begin() + static_cast<std::ptrdiff_t>(offset + count));
  out.guards_intact = all_poison(all.data() + offset + count, kGuard * sizeof(T)) &&
                      all_poison(all.data(), offset * sizeof(T));
  return out;
}

std::vector<std::int64_t> host_agreement(const std::vector<float>& values) {
  std::vector<std::int64_t> words(exact_block_count(values.size()) * exact::kAgreementWords);
  exact_agreement_words(values.data(), values.size(), words.data());
  return words;
}

Output<std::int64_t> gpu_agreement(const std::vector<float>& values, std::size_t offset) {
  const DeviceBuffer in = upload_at(values, offset);
  const std::size_t words = exact_block_count(values.size()) * exact::kAgreementWords;
  DeviceBuffer out(kDevice, (offset + words + kGuard) * sizeof(std::int64_t));
  out.fill_bytes(kPoisonByte);
  launch_exact_agreement_words(at<float>(in, offset), values.size(), at<std::int64_t>(out, offset),
                               nullptr);
  return download_output<std::int64_t>(out, offset, words);
}

// The plan's slots on the device, for the lifetime of the object.
struct DevicePlan {
  explicit DevicePlan(const ExactPlan& plan)
      : slots(upload_at(plan.blocks, 0)), view(view_of(plan, at<ExactBlockSlot>(slots, 0))) {}
  DeviceBuffer slots;
  ExactPlanView view;
};

Output<std::int64_t> gpu_encode(const std::vector<float>& values, const ExactPlan& plan,
                                std::size_t offset, LimbWidth width) {
  const DeviceBuffer in = upload_at(values, offset);
  const DevicePlan device_plan(plan);
  DeviceBuffer out(kDevice, (offset + plan.words + kGuard) * sizeof(std::int64_t));
  out.fill_bytes(kPoisonByte);
  detail::launch_exact_encode_with(at<float>(in, offset), device_plan.view,
                                   at<std::int64_t>(out, offset), nullptr, width);
  return download_output<std::int64_t>(out, offset, plan.words);
}

Output<float> gpu_round(const std::vector<std::int64_t>& sums, const ExactPlan& plan, Op op,
                        std::size_t offset, MeanDivision division) {
  const DeviceBuffer in = upload_at(sums, offset);
  const DevicePlan device_plan(plan);
  DeviceBuffer out(kDevice, (offset + plan.count + kGuard) * sizeof(float));
  out.fill_bytes(kPoisonByte);
  detail::launch_exact_round_with(at<std::int64_t>(in, offset), device_plan.view, op,
                                  at<float>(out, offset), nullptr, division);
  return download_output<float>(out, offset, plan.count);
}

std::string describe(Distribution dist, std::uint32_t world, std::size_t n) {
  std::ostringstream out;
  out << to_string(dist) << " W=" << world << " n=" << n;
  return out.str();
}

// One distribution and length: the agreement words of each distinct rank; then, per world,
// the plan the merged words give, every distinct rank's digits, and the rounding of the
// digits summed over the W ranks, for both ops.
void expect_kernels_equal_host(Distribution dist, std::size_t n, std::size_t offset) {
  std::vector<std::vector<float>> arenas;
  std::vector<std::vector<std::int64_t>> agreement;
  for (std::uint32_t r = 0; r < kDistinctRanks; ++r) {
    arenas.push_back(generate_arena(ArenaSpec{kLatestGenerator, dist, 17 + n}, r, n));
    agreement.push_back(host_agreement(arenas.back()));
    const Output<std::int64_t> gpu = gpu_agreement(arenas.back(), offset);
    EXPECT_TRUE(same_words(agreement.back(), gpu.values))
        << "agreement words, rank " << r << " " << describe(dist, 1, n) << " offset " << offset;
    EXPECT_TRUE(gpu.guards_intact) << "agreement words written out of range";
  }
  for (std::uint32_t world : kWorlds) {
    const std::string what = describe(dist, world, n) + " offset " + std::to_string(offset);
    const std::uint32_t distinct = std::min(world, kDistinctRanks);
    std::vector<std::int64_t> agreed = agreement[0];
    for (std::uint32_t r = 1; r < distinct; ++r) {
      merge_agreement_words(agreed.data(), agreement[r].data(), agreed.size());
    }
    const ExactPlan plan = plan_exact_blocks(agreed.data(), n, world);
    std::vector<std::int64_t> sums(plan.words, 0);
    for (std::uint32_t r = 0; r < distinct; ++r) {
      std::vector<std::int64_t> digits(plan.words);
      exact_encode(arenas[r].data(), plan, digits.data());
      for (LimbWidth width : detail::kAllLimbWidths) {
        const Output<std::int64_t> gpu = gpu_encode(arenas[r], plan, offset, width);
        EXPECT_TRUE(same_words(digits, gpu.values))
            << "digits, rank " << r << " " << what << " " << detail::to_string(width);
        EXPECT_TRUE(gpu.guards_intact) << "digits written out of range, " << what;
      }
      // Ranks r, r + 3, r + 6, … hold this arena.
      const auto copies = static_cast<std::int64_t>((world - 1 - r) / kDistinctRanks + 1);
      for (std::size_t i = 0; i < plan.words; ++i) sums[i] += copies * digits[i];
    }
    for (Op op : {Op::kSum, Op::kMean}) {
      std::vector<float> expected(n);
      exact_round(sums.data(), plan, op, expected.data());
      for (MeanDivision division : detail::kAllMeanDivisions) {
        if (!detail::applies_to(division, world)) continue;
        if (op == Op::kSum && division != detail::default_mean_division(world)) continue;
        const Output<float> gpu = gpu_round(sums, plan, op, offset, division);
        EXPECT_TRUE(same_bits(expected, gpu.values))
            << "rounding, " << what << " " << to_string(op) << " " << detail::to_string(division);
        EXPECT_TRUE(gpu.guards_intact) << "results written out of range, " << what;
      }
    }
  }
}

TEST(ExactKernel, EqualsHostOnEveryDistributionWorldAndLength) {
  RV_SKIP_WITHOUT_GPU();
  for (Distribution dist : kAllDistributions) {
    for (std::size_t n : kCounts) expect_kernels_equal_host(dist, n, 0);
  }
}

// Values, digits and results one element off their alignment: every vector access falls
// back to its scalar path (and the odd-sized last block's upper limbs always do).
TEST(ExactKernel, EqualsHostOnUnalignedBuffers) {
  RV_SKIP_WITHOUT_GPU();
  for (Distribution dist : kAllDistributions) {
    for (std::size_t n : {std::size_t{1025}, std::size_t{3 * 1024 + 77}}) {
      expect_kernels_equal_host(dist, n, 1);
    }
  }
}

// One-limb blocks with sums across the whole range a world can produce (|D| < W × 2^L) and
// windows from the bottom of the subnormals to beyond the overflow, for worlds up to 2^20:
// the mean's reciprocal and power-of-two paths against the host's long division on every
// kind of quotient.
TEST(ExactKernel, RoundsExtremeOneLimbSumsLikeHost) {
  RV_SKIP_WITHOUT_GPU();
  std::mt19937_64 random(20);
  for (std::uint32_t world : {2u, 3u, 7u, 1000u, 65535u, (1u << 20) - 1, 1u << 20}) {
    const int limb_bits = exact::limb_bits(world);
    // |D| ≤ W × (2^L − 1) < 2^63.
    const std::uint64_t largest =
        static_cast<std::uint64_t>(world) * ((std::uint64_t{1} << limb_bits) - 1);
    ExactPlan plan;
    plan.world = world;
    plan.limb_bits = limb_bits;
    plan.count = 64 * exact::kBlock;
    plan.words = plan.count;
    for (std::size_t b = 0; b < 64; ++b) {
      const auto bottom = static_cast<std::int32_t>(b * 4 + (b % 3));  // 0 … 254
      plan.blocks.push_back(
          ExactBlockSlot{static_cast<std::int64_t>(b * exact::kBlock), bottom, 1, 0});
    }
    std::vector<std::int64_t> sums(plan.words);
    for (std::size_t i = 0; i < sums.size(); ++i) {
      std::uint64_t magnitude;
      switch (i % 8) {
        case 0:
          magnitude = largest - (random() % 4);
          break;
        case 1:
          magnitude = random() % 1024;
          break;
        case 2:
          magnitude = (random() % world) * (std::uint64_t{1} << (random() % 40));
          break;
        case 3:
          magnitude = std::uint64_t{1} << (random() % 62);
          break;
        default:
          magnitude = random() % (largest + 1);
          break;
      }
      if (magnitude > largest) magnitude = largest;
      const auto value = static_cast<std::int64_t>(magnitude);
      sums[i] = (random() & 1) ? -value : value;
    }
    for (Op op : {Op::kSum, Op::kMean}) {
      std::vector<float> expected(plan.count);
      exact_round(sums.data(), plan, op, expected.data());
      for (MeanDivision division : detail::kAllMeanDivisions) {
        if (!detail::applies_to(division, world)) continue;
        const Output<float> gpu = gpu_round(sums, plan, op, 0, division);
        EXPECT_TRUE(same_bits(expected, gpu.values))
            << "W=" << world << " " << to_string(op) << " " << detail::to_string(division);
      }
    }
  }
}

// ---- combine ---------------------------------------------------------------------------

std::vector<std::int64_t> host_combine(const std::vector<std::int64_t>& stacked,
                                       std::uint32_t slots, std::size_t stride, std::size_t n,
                                       IntReduction op) {
  std::vector<std::int64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t acc = stacked[i];
    for (std::uint32_t r = 1; r < slots; ++r) {
      const std::int64_t v = stacked[r * stride + i];
      acc = op == IntReduction::kMax ? std::max(acc, v) : acc + v;
    }
    out[i] = acc;
  }
  return out;
}

TEST(ExactKernel, CombinesWordsLikeTheLibrary) {
  RV_SKIP_WITHOUT_GPU();
  std::mt19937_64 random(3);
  for (std::uint32_t slots : kWorlds) {
    for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{1023}, std::size_t{100003}}) {
      // An even stride (the vector path) and an odd one (scalar); a table at an odd offset.
      for (std::size_t stride : {n + n % 2, n + 1 + n % 2}) {
        for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
          std::vector<std::int64_t> stacked((slots - 1) * stride + n);
          for (auto& v : stacked) {
            v = static_cast<std::int64_t>(random() % (std::uint64_t{1} << 53)) -
                (std::int64_t{1} << 52);  // 256 of them sum well inside int64
          }
          for (IntReduction op : {IntReduction::kSum, IntReduction::kMax}) {
            const auto expected = host_combine(stacked, slots, stride, n, op);
            const DeviceBuffer table = upload_at(stacked, offset);
            DeviceBuffer out(kDevice, (offset + n + kGuard) * sizeof(std::int64_t));
            out.fill_bytes(kPoisonByte);
            launch_combine_words(at<std::int64_t>(table, offset), slots, stride, n, op,
                                 at<std::int64_t>(out, offset), nullptr);
            const auto gpu = download_output<std::int64_t>(out, offset, n);
            EXPECT_TRUE(same_words(expected, gpu.values))
                << "slots=" << slots << " n=" << n << " stride=" << stride << " offset=" << offset
                << (op == IntReduction::kMax ? " max" : " sum");
            EXPECT_TRUE(gpu.guards_intact);
            // In place into slot 0, as the loopback world does.
            launch_combine_words(at<std::int64_t>(table, offset), slots, stride, n, op,
                                 at<std::int64_t>(table, offset), nullptr);
            const auto in_place = download_output<std::int64_t>(table, offset, n);
            EXPECT_TRUE(same_words(expected, in_place.values)) << "in place, slots=" << slots;
          }
        }
      }
    }
  }
}

// A zero stride adds slot 0 to itself: W identical ranks (the reducer test's transport).
TEST(ExactKernel, ZeroStrideMultipliesBySlots) {
  RV_SKIP_WITHOUT_GPU();
  const std::vector<std::int64_t> words = {0, 1, -1, 5, -(std::int64_t{1} << 40), 7};
  const DeviceBuffer buffer = upload_at(words, 0);
  launch_combine_words(at<std::int64_t>(buffer, 0), 3, 0, words.size(), IntReduction::kSum,
                       at<std::int64_t>(buffer, 0), nullptr);
  const auto gpu = download_output<std::int64_t>(buffer, 0, words.size());
  std::vector<std::int64_t> expected;
  for (std::int64_t w : words) expected.push_back(3 * w);
  EXPECT_TRUE(same_words(expected, gpu.values));
}

// ---- checks before any launch (no device needed) -------------------------------------

TEST(ExactKernel, RejectsBadArguments) {
  std::int64_t word = 0;
  EXPECT_THROW(launch_combine_words(&word, 0, 1, 1, IntReduction::kSum, &word, nullptr),
               InputError);
  EXPECT_THROW(launch_combine_words(nullptr, 2, 1, 1, IntReduction::kSum, &word, nullptr),
               InputError);
  std::int64_t table[4] = {};
  // The output overlaps slot 1 (only an in-place combine into slot 0 is allowed).
  EXPECT_THROW(launch_combine_words(table, 2, 2, 2, IntReduction::kSum, table + 1, nullptr),
               InputError);
  EXPECT_THROW(launch_exact_agreement_words(nullptr, 5, &word, nullptr), InputError);

  ExactPlanView view;
  view.count = 1025;
  view.block_count = 1;  // a plan of 1025 elements has 2 blocks
  float value = 0;
  EXPECT_THROW(launch_exact_encode(&value, view, &word, nullptr), InputError);
  view.block_count = 2;  // the slots are not on the device
  EXPECT_THROW(launch_exact_encode(&value, view, &word, nullptr), InputError);
  ExactBlockSlot slot{};
  view.blocks = &slot;
  view.world = 8;  // limb width 62 is W = 1's, not W = 8's
  EXPECT_THROW(launch_exact_round(&word, view, Op::kSum, &value, nullptr), InputError);
  view.world = 3;  // limb width 61 is W = 3's; 3 is no power of two
  view.limb_bits = exact::limb_bits(3);
  view.count = 1;
  view.block_count = 1;
  EXPECT_THROW(detail::launch_exact_round_with(&word, view, Op::kMean, &value, nullptr,
                                               MeanDivision::kPowerOfTwo),
               InputError);
  // Nothing to do: no launch, no error.
  EXPECT_NO_THROW(launch_exact_agreement_words(nullptr, 0, nullptr, nullptr));
  EXPECT_NO_THROW(launch_exact_encode(nullptr, ExactPlanView{}, nullptr, nullptr));
  EXPECT_NO_THROW(launch_exact_round(nullptr, ExactPlanView{}, Op::kMean, nullptr, nullptr));
}

// floor(x × m / 2^k) against x / W on the host, for every divisor up to 4096, the largest
// ones and a random sample between, over the dividends the mean produces (below W × 2^32)
// and up to 2^53: the edges around multiples of W and random ones.
std::uint64_t mulhi64(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32, b_lo = b & 0xFFFFFFFFu,
                      b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi,
                      hi_hi = a_hi * b_hi;
  const std::uint64_t middle = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFu) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (middle >> 32);
}

// The power-of-two mean's premise, on the host with the law's own functions: for W = 2^k
// the long-division mean of any one-limb sum is the sum's rounding k positions lower, over
// sums of every size a world can produce and windows from the subnormals to the overflow.
TEST(ExactKernel, PowerOfTwoMeanIsTheSumRoundedLower) {
  std::mt19937_64 random(8);
  for (int k = 0; k <= 20; ++k) {
    const std::uint32_t world = std::uint32_t{1} << k;
    EXPECT_TRUE(detail::applies_to(MeanDivision::kPowerOfTwo, world));
    EXPECT_EQ(detail::default_mean_division(world), MeanDivision::kPowerOfTwo);
    const std::uint64_t largest =
        static_cast<std::uint64_t>(world) * ((std::uint64_t{1} << exact::limb_bits(world)) - 1);
    for (int i = 0; i < 20000; ++i) {
      std::uint64_t magnitude = i % 4 == 0   ? random() % 4096
                                : i % 4 == 1 ? largest - random() % 16
                                             : (random() % (largest + 1)) >> (random() % 60);
      const auto d = static_cast<std::int64_t>(magnitude) * ((random() & 1) ? -1 : 1);
      const int bottom = static_cast<int>(random() % (exact::kTopPosition + 1));
      ASSERT_EQ(exact::round_one_limb(d, bottom, world, true),
                exact::round_one_limb(d, bottom - k, world, false))
          << "W=2^" << k << " D=" << d << " bottom=" << bottom;
    }
  }
  for (std::uint32_t world : {3u, 5u, 6u, 1000u, (1u << 20) - 1}) {
    EXPECT_FALSE(detail::applies_to(MeanDivision::kPowerOfTwo, world));
    EXPECT_EQ(detail::default_mean_division(world), MeanDivision::kReciprocal);
  }
}

TEST(ExactKernel, ReciprocalDividesExactly) {
  std::mt19937_64 random(11);
  std::vector<std::uint32_t> divisors;
  for (std::uint32_t w = 2; w <= 4096; ++w) divisors.push_back(w);
  for (std::uint32_t w : {(1u << 20) - 1, 1u << 20, (1u << 19) + 1, 1u << 19, 2047u * 511u}) {
    divisors.push_back(w);
  }
  for (int i = 0; i < 2000; ++i) {
    divisors.push_back(static_cast<std::uint32_t>(2 + random() % ((1u << 20) - 1)));
  }
  for (std::uint32_t w : divisors) {
    const detail::Reciprocal r = detail::reciprocal_of(w);
    ASSERT_EQ(r.divisor, w);
    const std::uint64_t limit = std::uint64_t{1} << 53;
    std::vector<std::uint64_t> dividends = {
        0, 1, w - 1u, w, w + 1u, limit - 1, limit - w, static_cast<std::uint64_t>(w) << 32};
    for (std::uint64_t top : {static_cast<std::uint64_t>(w) << 32, limit}) {
      const std::uint64_t q = (top - 1) / w;
      for (std::uint64_t k : {q, q - 1, q / 2, q / 3}) {
        dividends.push_back(k * w);
        dividends.push_back(k * w - 1);
        dividends.push_back(k * w + w - 1);
      }
    }
    for (int i = 0; i < 40; ++i) dividends.push_back(random() % limit);
    for (std::uint64_t x : dividends) {
      if (x >= limit) continue;
      const std::uint64_t q = mulhi64(x, r.magic) >> r.shift;
      ASSERT_EQ(q, x / w) << "x=" << x << " W=" << w << " magic=" << r.magic
                          << " shift=" << r.shift;
    }
  }
  EXPECT_THROW(detail::reciprocal_of(1), InputError);
  EXPECT_THROW(detail::reciprocal_of((1u << 20) + 1), InputError);
}

}  // namespace
}  // namespace rv
