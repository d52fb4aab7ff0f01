// Golden files (docs/DESIGN.md §3): GNU checksum lines `<digest>  <case-id>`, `#` comments. The
// line parser classifies every input and never throws; the committed suite parses cleanly
// and covers the matrix issue 2 asks for.
#include "verify/golden/golden_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/error.h"
#include "tests/support/scratch_dir.h"

namespace rv {
namespace {

using ::testing::HasSubstr;

const std::string kDigest = "99aa06d3014798d86001c324468d497f";
const std::string kId = "contract=fixed-order,op=sum,w=1,n=0,dist=normal,seed=1,gen=1";
const std::string kLine = kDigest + "  " + kId;

TEST(GoldenLine, ParsesAnEntry) {
  const ParsedGoldenLine parsed = parse_golden_line(kLine);
  ASSERT_EQ(parsed.kind, GoldenLineKind::kEntry) << parsed.detail;
  EXPECT_EQ(parsed.entry.digest.hex(), kDigest);
  EXPECT_EQ(format_case_id(parsed.entry.id), kId);
  EXPECT_EQ(format_golden_line(parsed.entry.digest, parsed.entry.id), kLine);
}

TEST(GoldenLine, CarriageReturnIsTolerated) {
  const ParsedGoldenLine parsed = parse_golden_line(kLine + "\r");
  ASSERT_EQ(parsed.kind, GoldenLineKind::kEntry) << parsed.detail;
  EXPECT_EQ(format_case_id(parsed.entry.id), kId);
}

TEST(GoldenLine, CommentsAndBlankLines) {
  ParsedGoldenLine parsed = parse_golden_line("# made by: reduce-verify");
  EXPECT_EQ(parsed.kind, GoldenLineKind::kComment);
  EXPECT_EQ(parsed.detail, " made by: reduce-verify");
  EXPECT_EQ(parse_golden_line("#").kind, GoldenLineKind::kComment);
  EXPECT_EQ(parse_golden_line("#\r").kind, GoldenLineKind::kComment);
  for (const char* blank : {"", " ", "   ", "\t", " \t ", "\r"}) {
    EXPECT_EQ(parse_golden_line(blank).kind, GoldenLineKind::kBlank) << "'" << blank << "'";
  }
}

struct BadLine {
  std::string line;
  std::string reason;  // part of the detail
};

TEST(GoldenLine, MalformedLinesAreClassifiedWithAReason) {
  std::string upper = kLine;
  upper[0] = 'A';
  std::string non_hex = kLine;
  non_hex[5] = 'g';
  const BadLine bad[] = {
      {kDigest + " " + kId, "two spaces"},
      {kDigest + "\t" + kId, "two spaces"},
      {kDigest, "two spaces"},
      {kDigest + "  ", "case id"},
      {upper, "32 lowercase hex"},
      {non_hex, "32 lowercase hex"},
      {kDigest.substr(1) + "  " + kId, "32 lowercase hex"},
      {kDigest + "0  " + kId, "32 lowercase hex"},
      {"  " + kId, "32 lowercase hex"},
      {kDigest + "   " + kId, "case id"},
      {kDigest + "  " + kId + " ", "'gen'"},
      {kDigest + "  " + kId + ",x=1", "after gen"},
      {kDigest + "  contract=fixed-order,op=sum,w=0,n=0,dist=normal,seed=1,gen=1", "w = 0"},
      {kDigest + "  contract=fixed-order,op=sum,w=1,n=0,dist=normal,seed=1,gen=9", "gen = 9"},
      {std::string(kLine).insert(40, 1, '\0'), "NUL"},
      {std::string(1, '\0'), "NUL"},
      {kLine + std::string(2000, 'x'), "characters long"},
      {std::string(5000, 'a'), "characters long"},
      {"\xff\xfe garbage", "two spaces"},
      {" " + kLine, "32 lowercase hex"},
  };
  for (const BadLine& b : bad) {
    const ParsedGoldenLine parsed = parse_golden_line(b.line);
    EXPECT_EQ(parsed.kind, GoldenLineKind::kMalformed) << "line: " << b.line.substr(0, 120);
    EXPECT_THAT(parsed.detail, HasSubstr(b.reason)) << "line: " << b.line.substr(0, 120);
  }
}

TEST(GoldenText, NumbersLinesFromOneAndCollectsEverything) {
  const std::string text = "# header\r\n" + kLine + "\r\n\nnot a line\n" + kLine + "\n# tail";
  const GoldenFile file = parse_golden_text(text, "suite.xxh128");
  EXPECT_EQ(file.path, "suite.xxh128");
  ASSERT_EQ(file.comments.size(), 2u);
  EXPECT_EQ(file.comments[0], " header");
  EXPECT_EQ(file.comments[1], " tail");
  ASSERT_EQ(file.entries.size(), 2u);
  EXPECT_EQ(file.entries[0].line, 2u);
  EXPECT_EQ(file.entries[1].line, 5u);
  ASSERT_EQ(file.malformed.size(), 1u);
  EXPECT_EQ(file.malformed[0].line, 4u);
}

TEST(GoldenText, LastLineWithoutNewlineCounts) {
  const GoldenFile file = parse_golden_text(kLine, "f");
  ASSERT_EQ(file.entries.size(), 1u);
  EXPECT_EQ(file.entries[0].line, 1u);
  EXPECT_TRUE(parse_golden_text("", "f").entries.empty());
}

TEST(GoldenText, GarbageNeverThrows) {
  std::string noise;
  std::uint32_t x = 2463534242u;
  for (int i = 0; i < 200000; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    noise += static_cast<char>(x & 0xFF);
  }
  GoldenFile file;
  EXPECT_NO_THROW(file = parse_golden_text(noise, "noise"));
  EXPECT_TRUE(file.entries.empty());
  EXPECT_FALSE(file.malformed.empty());
}

TEST(GoldenFileRead, MissingOrDirectoryIsAnInputErrorNamingThePath) {
  test::ScratchDir dir;
  try {
    read_golden_file(dir.file("absent.xxh128"));
    ADD_FAILURE() << "read a missing file";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr(dir.file("absent.xxh128")));
  }
  try {
    read_golden_file(dir.path());
    ADD_FAILURE() << "read a directory";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr(dir.path()));
  }
}

// The committed suite parses without a malformed line and covers what issue 2 requires:
// both ops, all five distributions, W ∈ {1, 2, 3, 4, 5, 7, 8, 16, 64, 256}, N = 0, 1, N < W,
// N with a remainder, N ≥ 2^24, several seeds, one line per case.
TEST(CommittedSuite, ParsesCleanlyAndCoversTheMatrix) {
  const GoldenFile file = read_golden_file(RV_SOURCE_DIR "/golden/fixed-order.xxh128");
  EXPECT_TRUE(file.malformed.empty()) << file.malformed[0].line << ": " << file.malformed[0].reason;
  // 1184 binary32 all-reduce cases, then 1226 bf16 and f16 ones, then 1512 reduce-scatter
  // ones in all three dtypes (golden/regenerate.sh).
  ASSERT_EQ(file.entries.size(), 3922u);
  std::size_t half = 0, scatter = 0;
  std::set<std::uint32_t> scatter_worlds;
  bool scatter_empty_shard = false;
  for (const GoldenEntry& entry : file.entries) {
    const bool is_scatter = entry.id.coll == Collective::kReduceScatter;
    half += !is_scatter && entry.id.dtype != DType::kF32;
    scatter += is_scatter;
    if (is_scatter) scatter_worlds.insert(entry.id.world);
    scatter_empty_shard = scatter_empty_shard || (is_scatter && entry.id.count < entry.id.world);
  }
  EXPECT_EQ(half, 1226u);
  EXPECT_EQ(scatter, 1512u);
  EXPECT_EQ(scatter_worlds.size(), 10u);
  EXPECT_TRUE(scatter_empty_shard);
  EXPECT_FALSE(file.comments.empty());
  bool says_how_to_regenerate = false;
  for (const std::string& comment : file.comments) {
    says_how_to_regenerate =
        says_how_to_regenerate || comment.find("regenerate") != std::string::npos;
  }
  EXPECT_TRUE(says_how_to_regenerate);

  std::set<std::string> ids;
  std::set<Op> ops;
  std::set<Distribution> dists;
  std::set<std::uint32_t> worlds;
  std::set<std::uint64_t> seeds;
  bool zero = false, one = false, below_world = false, remainder = false, large = false;
  for (const GoldenEntry& entry : file.entries) {
    const CaseId& id = entry.id;
    EXPECT_TRUE(ids.insert(format_case_id(id)).second) << "line " << entry.line << " repeats";
    EXPECT_EQ(id.contract, Contract::kFixedOrder) << "line " << entry.line;
    ops.insert(id.op);
    dists.insert(id.dist);
    worlds.insert(id.world);
    seeds.insert(id.seed);
    zero = zero || id.count == 0;
    one = one || id.count == 1;
    below_world = below_world || (id.count > 0 && id.count < id.world);
    remainder = remainder || (id.count > id.world && id.count % id.world != 0);
    large = large || id.count >= (std::uint64_t{1} << 24);
  }
  EXPECT_EQ(ops.size(), 2u);
  EXPECT_EQ(dists.size(), 5u);
  for (std::uint32_t w : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 16u, 64u, 256u}) {
    EXPECT_TRUE(worlds.count(w)) << "W=" << w;
  }
  EXPECT_GE(seeds.size(), 2u);
  EXPECT_TRUE(zero && one && below_world && remainder && large);
}

}  // namespace
}  // namespace rv
