// `reduce-verify digest` end to end: for raw inputs, the printed digest equals what the real
// `xxh128sum` prints for the --dump file, and the dumped bytes equal an independent fold
// written here (on data full of NaNs, infinities, signed zeros and subnormals); for a case
// id, digest reproduces the committed golden line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tests/cli/cli_support.h"
#include "tests/support/scratch_dir.h"

namespace rv::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using Ranks = std::vector<std::vector<float>>;

float from_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

std::uint32_t bits_of(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Values chosen to exercise every rule: specials first, then a mixed random stream.
Ranks hostile_ranks(std::uint32_t world, std::size_t n, std::uint64_t seed) {
  static const std::uint32_t kSpecials[] = {
      0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,  // ±0, ±inf
      0x7FC00000u, 0xFFC00000u, 0x7FC12345u, 0x7F800001u,  // NaNs: quiet, payloads, signalling
      0xFFA00000u, 0x00000001u, 0x807FFFFFu, 0x00400000u,  // sNaN, subnormals
      0x00800000u, 0x80800000u, 0x7F7FFFFFu, 0xFF7FFFFFu,  // smallest normals, ±max
      0x3F800000u, 0x4CBEBC20u, 0xCCBEBC20u,               // 1, ±1e8: order-sensitive
  };
  constexpr std::size_t kSpecialCount = sizeof kSpecials / sizeof kSpecials[0];
  std::uint64_t state = seed;
  Ranks ranks(world, std::vector<float>(n));
  for (std::uint32_t r = 0; r < world; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const auto h = static_cast<std::uint32_t>(state >> 32);
      if (i < kSpecialCount * kSpecialCount) {
        // Every ordered pair of specials appears between ranks 0 and 1.
        ranks[r][i] =
            from_bits(kSpecials[r == 0 ? i / kSpecialCount
                                       : (r == 1 ? i % kSpecialCount : h % kSpecialCount)]);
      } else if (h % 4 == 0) {
        ranks[r][i] = from_bits(kSpecials[(h >> 8) % kSpecialCount]);
      } else {
        ranks[r][i] = from_bits(h);  // any bits at all
      }
    }
  }
  return ranks;
}

// The contract written out independently of core/fold: left to right from rank 0, the mean
// as sum × fl(1/W), every NaN as 0x7FC00000.
std::vector<float> independent_fold(const Ranks& ranks, bool mean) {
  const std::size_t n = ranks[0].size();
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    volatile float acc = ranks[0][i];
    for (std::size_t r = 1; r < ranks.size(); ++r) acc = acc + ranks[r][i];
    if (mean) {
      volatile float scale = 1.0f / static_cast<float>(ranks.size());
      acc = acc * scale;
    }
    out[i] = std::isnan(acc) ? from_bits(0x7FC00000u) : acc;
  }
  return out;
}

TEST(DigestInputs, EqualsXxh128sumOfDumpAndAnIndependentFold) {
  for (std::uint32_t world : {1u, 2u, 3u, 5u}) {
    for (bool mean : {false, true}) {
      SCOPED_TRACE("W=" + std::to_string(world) + (mean ? " mean" : " sum"));
      ScratchDir dir;
      const std::size_t n = 5000;
      const Ranks ranks = hostile_ranks(world, n, 17 * world + mean);
      std::vector<std::string> args = {
          "digest", "--op", mean ? "mean" : "sum", "--dump", dir.file("reduced.f32"), "--inputs"};
      for (std::uint32_t r = 0; r < world; ++r) {
        args.push_back(dir.write("r" + std::to_string(r) + ".f32", ranks[r].data(), n * 4));
      }
      const ProcessResult result = run_tool(args);
      ASSERT_EQ(result.exit_code, 0) << summary(result);
      const std::string printed = result.out.substr(0, result.out.find(' '));
      ASSERT_EQ(printed.size(), 32u) << result.out;

      const std::vector<float> expected = independent_fold(ranks, mean);
      const std::string expected_file = dir.write("expected.f32", expected.data(), n * 4);
      const std::string dumped = ScratchDir::read(dir.file("reduced.f32"));
      ASSERT_EQ(dumped.size(), n * 4);
      for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t got;
        std::memcpy(&got, dumped.data() + 4 * i, 4);
        ASSERT_EQ(got, bits_of(expected[i]))
            << "element " << i << ": inputs 0x" << std::hex << bits_of(ranks[0][i]) << " …";
      }
      EXPECT_EQ(printed, xxh128sum(dir.file("reduced.f32")));
      EXPECT_EQ(printed, xxh128sum(expected_file));
      EXPECT_THAT(result.out, HasSubstr("w=" + std::to_string(world) + ",n=5000,inputs="));
    }
  }
}

// bf16 and f16 files: the printed digest is xxh128sum of the dumped 2-byte result, and the
// result is the fixed-order rule computed here by hand for values chosen so that every step
// is exact in binary32 and the last rounding decides: 1 + 2^-9 + 2^-9 is 1 + 2^-8 (bf16
// keeps 7 fraction bits: exactly 1 + 2^-7 / 2, a tie to even → 1.0; f16 keeps it).
TEST(DigestInputs, HalfFilesDigestTheirOwnBytes) {
  ScratchDir dir;
  // bf16: 1.0 = 0x3f80; 2^-9 = 0x3b00. f16: 1.0 = 0x3c00; 2^-9 = 0x1800.
  const std::uint16_t bf16[3] = {0x3f80, 0x3b00, 0x3b00}, f16[3] = {0x3c00, 0x1800, 0x1800};
  for (const bool is_f16 : {false, true}) {
    const std::uint16_t* v = is_f16 ? f16 : bf16;
    std::vector<std::string> args = {"digest", "--dtype", is_f16 ? "f16" : "bf16", "--dump",
                                     dir.file("out"), "--inputs"};
    for (int r = 0; r < 3; ++r) {
      args.push_back(dir.write("r" + std::to_string(r) + (is_f16 ? ".f16" : ".bf16"), &v[r], 2));
    }
    const ProcessResult result = run_tool(args);
    ASSERT_EQ(result.exit_code, 0) << summary(result);
    const std::string dumped = ScratchDir::read(dir.file("out"));
    ASSERT_EQ(dumped.size(), 2u);
    std::uint16_t got;
    std::memcpy(&got, dumped.data(), 2);
    // f16: 1 + 2^-8 is 0x3c04 exactly. bf16: 1 + 2^-8 is the tie between 0x3f80 and 0x3f81,
    // to even: 0x3f80.
    EXPECT_EQ(got, is_f16 ? 0x3c04 : 0x3f80);
    EXPECT_EQ(result.out.substr(0, 32), xxh128sum(dir.file("out")));
    EXPECT_THAT(result.out, HasSubstr(is_f16 ? ",dtype=f16,w=3,n=1," : ",dtype=bf16,w=3,n=1,"));
  }
}

TEST(DigestInputs, EmptyArenasHaveTheDigestOfNoBytes) {
  ScratchDir dir;
  const std::string a = dir.write("a.f32", "");
  const std::string b = dir.write("b.f32", "");
  const ProcessResult result =
      run_tool({"digest", "--dump", dir.file("out.f32"), "--inputs", a, b});
  ASSERT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_THAT(result.out, StartsWith("99aa06d3014798d86001c324468d497f  "));
  EXPECT_EQ(xxh128sum(dir.file("out.f32")), "99aa06d3014798d86001c324468d497f");
}

// --coll reduce-scatter (docs/DESIGN.md §2.6): the shards of 3 ranks' 1001 values (334, 334
// and 333 elements) in rank order have the all-reduce's digest under both contracts, and a
// --coll the tool does not know is a usage error.
TEST(DigestInputs, ReduceScatterShardsHaveTheAllReducesDigest) {
  ScratchDir dir;
  std::vector<std::string> files;
  for (int r = 0; r < 3; ++r) {
    std::vector<float> values(1001);
    for (std::size_t i = 0; i < values.size(); ++i) {
      values[i] = static_cast<float>((i * 7919 + static_cast<std::size_t>(r) * 104729) % 2003) /
                  97.0f - 10.0f;
    }
    files.push_back(dir.write("r" + std::to_string(r) + ".f32", values.data(),
                              values.size() * sizeof(float)));
  }
  for (const char* contract : {"fixed-order", "exact"}) {
    std::vector<std::string> all_reduce = {"digest", "--contract", contract, "--inputs"};
    all_reduce.insert(all_reduce.end(), files.begin(), files.end());
    std::vector<std::string> scatter = {"digest", "--coll", "reduce-scatter", "--contract",
                                        contract, "--inputs"};
    scatter.insert(scatter.end(), files.begin(), files.end());
    const ProcessResult a = run_tool(all_reduce);
    const ProcessResult s = run_tool(scatter);
    ASSERT_EQ(a.exit_code, 0) << summary(a);
    ASSERT_EQ(s.exit_code, 0) << summary(s);
    EXPECT_EQ(s.out, a.out) << contract;
  }
  std::vector<std::string> bad = {"digest", "--coll", "all-gather", "--inputs"};
  bad.insert(bad.end(), files.begin(), files.end());
  const ProcessResult refused = run_tool(bad);
  EXPECT_EQ(refused.exit_code, 2) << summary(refused);
  EXPECT_THAT(refused.err, HasSubstr("--coll"));
}

TEST(DigestCase, ReproducesCommittedGoldenLines) {
  const std::vector<std::string> lines = suite_lines(200000);
  ASSERT_GT(lines.size(), 900u);
  // A spread of lines: every 50th small one (all ops, distributions, worlds appear).
  for (std::size_t i = 0; i < lines.size(); i += 50) {
    const ProcessResult result = run_tool({"digest", "--case", lines[i].substr(34)});
    ASSERT_EQ(result.exit_code, 0) << summary(result);
    EXPECT_EQ(result.out, lines[i] + "\n");
  }
}

TEST(DigestCase, DumpHashesToTheDigest) {
  ScratchDir dir;
  const std::string id = "contract=fixed-order,op=mean,w=3,n=40001,dist=special,seed=2,gen=1";
  const ProcessResult result = run_tool({"digest", "--case", id, "--dump", dir.file("d.f32")});
  ASSERT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_EQ(result.out, xxh128sum(dir.file("d.f32")) + "  " + id + "\n");
  EXPECT_EQ(ScratchDir::read(dir.file("d.f32")).size(), 40001u * 4);
}

TEST(DigestCase, CaseOptionsGiveTheSameLineAsTheId) {
  const ProcessResult by_id = run_tool(
      {"digest", "--case", "contract=fixed-order,op=sum,w=7,n=4099,dist=cancel,seed=2,gen=1"});
  const ProcessResult by_options =
      run_tool({"digest", "--world", "7", "--count", "4099", "--dist", "cancel", "--seed", "2"});
  ASSERT_EQ(by_id.exit_code, 0) << summary(by_id);
  ASSERT_EQ(by_options.exit_code, 0) << summary(by_options);
  EXPECT_EQ(by_id.out, by_options.out);
  const std::vector<std::string> lines = suite_lines(1u << 20);
  EXPECT_NE(std::find(lines.begin(), lines.end(), by_id.out.substr(0, by_id.out.size() - 1)),
            lines.end())
      << "the committed suite holds this line: " << by_id.out;
}

TEST(Info, ReportsAnIeeeFloatingPointState) {
  const ProcessResult result = run_tool({"info"});
  ASSERT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_THAT(result.out, HasSubstr("(ok)"));
  EXPECT_THAT(result.out, Not(HasSubstr("BREAKS THE CONTRACT")));
  EXPECT_THAT(result.out, HasSubstr("xxHash"));
}

}  // namespace
}  // namespace rv::test
