// `reduce-verify replay` end to end (issue 20): a recording written here by hand in the
// Recorder's format (hash-chained manifest, rank files), its digests made by the real
// xxh128sum and its results by folds written here, verifies itself; a flipped bit in one rank
// file (even the lowest mantissa bit, which the fold rounds away) is exit 1 naming the file; an
// edited or dropped manifest record, a missing or wrong-size file is exit 2 naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"
#include "tests/support/scratch_dir.h"
#include "verify/audit/chained_lines.h"

namespace rv::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using Ranks = std::vector<std::vector<float>>;
constexpr std::size_t kCount = 1000;
constexpr int kWorld = 3;

std::string bytes_of(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4);
}

// Bucket 0 of step 2, fixed-order mean: element 0 is 1e8 + 1 + 0, whose 1 (rank 1) the fold
// rounds away, so the lowest mantissa bit of rank 1's element 0 does not reach the result.
Ranks fixed_order_ranks() {
  Ranks ranks(kWorld, std::vector<float>(kCount));
  for (int r = 0; r < kWorld; ++r) {
    for (std::size_t i = 0; i < kCount; ++i) {
      ranks[r][i] = static_cast<float>(i % 97) * 0.37f - static_cast<float>(5 * r);
    }
  }
  ranks[0][0] = 1e8f;
  ranks[1][0] = 1.0f;
  ranks[2][0] = 0.0f;
  return ranks;
}

// The fixed-order mean written out independently of core/fold: left to right from rank 0,
// then × fl(1/W) (no NaNs in these inputs).
std::vector<float> fixed_order_mean(const Ranks& ranks) {
  std::vector<float> out(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    volatile float acc = ranks[0][i];
    for (std::size_t r = 1; r < ranks.size(); ++r) acc = acc + ranks[r][i];
    volatile float scale = 1.0f / static_cast<float>(ranks.size());
    out[i] = acc * scale;
  }
  return out;
}

// Bucket 1 of step 2, exact sum: 1e8 + k − 1e8 is k exactly (a fold in rank order gives 0 or
// 8), so a replay under another contract than the recorded one would differ.
Ranks exact_ranks() {
  Ranks ranks(kWorld, std::vector<float>(kCount));
  for (std::size_t i = 0; i < kCount; ++i) {
    ranks[0][i] = 1e8f;
    ranks[1][i] = static_cast<float>(i % 7 + 1);
    ranks[2][i] = -1e8f;
  }
  return ranks;
}

std::vector<float> exact_sum(const Ranks& ranks) {
  std::vector<float> out(kCount);
  for (std::size_t i = 0; i < kCount; ++i) out[i] = ranks[1][i];
  return out;
}

// A recording as python/reduce_verify/recorder.py writes one (docs/audit.md).
class Recording {
 public:
  Recording() { records_.push_back(header()); }

  static nlohmann::json header() {
    return {{"recording", "reduce-verify torch recording"},
            {"version", 4},
            {"world", kWorld},
            {"digest", "xxh128"},
            {"byte_order", "little"}};
  }

  std::string dir() const { return dir_.path(); }
  std::string file(const std::string& relative) const { return dir_.file(relative); }

  // Writes the rank files and the bucket's record; digests by xxh128sum.
  void add(int step, int index, const std::string& contract, const std::string& op,
           const Ranks& ranks, const std::vector<float>& result) {
    char folder[64];
    std::snprintf(folder, sizeof folder, "step%06d/bucket%03d", step, index);
    std::filesystem::create_directories(dir_.file(folder));
    nlohmann::json bucket = {{"index", index}, {"numel", ranks[0].size()}};
    for (int r = 0; r < kWorld; ++r) {
      char name[32];
      std::snprintf(name, sizeof name, "/rank%04d.f32", r);
      const std::string relative = folder + std::string(name);
      bucket["files"].push_back(relative);
      bucket["inputs"].push_back(xxh128sum(dir_.write(relative, bytes_of(ranks[r]))));
    }
    const std::string result_digest = xxh128sum(scratch_.write("result.f32", bytes_of(result)));
    for (int r = 0; r < kWorld; ++r) bucket["results"].push_back(result_digest);
    records_.push_back({{"step", step},
                        {"contract", contract},
                        {"op", op},
                        {"dtype", "f32"},
                        {"device", "cpu"},
                        {"buckets", {bucket}}});
  }

  void end() { records_.push_back({{"end", true}, {"records", records_.size()}}); }

  std::vector<nlohmann::json>& records() { return records_; }

  // The manifest's lines, each chained as the trail's (DESIGN.md §12).
  std::vector<std::string> lines() const {
    std::string head(kChainGenesis);
    std::vector<std::string> out;
    for (const auto& record : records_) {
      const std::string body = record.dump();
      head = chain_next(head, body);
      out.push_back(body.substr(0, body.size() - 1) + ",\"chain\":\"" + head + "\"}\n");
    }
    return out;
  }

  void write_manifest(const std::vector<std::string>& lines) const {
    std::string text;
    for (const auto& line : lines) text += line;
    dir_.write("manifest.jsonl", text);
  }
  void write_manifest() const { write_manifest(lines()); }

 private:
  ScratchDir dir_, scratch_;
  std::vector<nlohmann::json> records_;
};

const std::string kRank1 = "step000002/bucket000/rank0001.f32";

// Step 2: bucket 0 fixed-order mean, bucket 1 exact sum; the end record; the manifest.
void record_two_buckets(Recording& recording) {
  const Ranks fixed = fixed_order_ranks(), exact = exact_ranks();
  recording.add(2, 0, "fixed-order", "mean", fixed, fixed_order_mean(fixed));
  recording.add(2, 1, "exact", "sum", exact, exact_sum(exact));
  recording.end();
  recording.write_manifest();
}

void flip_bit(const std::string& path, std::size_t element, int bit) {
  std::string bytes = ScratchDir::read(path);
  std::uint32_t word;
  std::memcpy(&word, bytes.data() + 4 * element, 4);
  word ^= std::uint32_t{1} << bit;
  std::memcpy(bytes.data() + 4 * element, &word, 4);
  std::filesystem::remove(path);
  std::ofstream(path, std::ios::binary) << bytes;
}

ProcessResult replay(const Recording& recording, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"replay", recording.dir()};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_tool(args);
}

TEST(Replay, ACleanRecordingVerifies) {
  Recording recording;
  record_two_buckets(recording);
  const ProcessResult result = replay(recording);
  ASSERT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_EQ(result.out, "step 2 bucket 0: OK\nstep 2 bucket 1: OK\n2 verified, 0 failed\n");
  EXPECT_EQ(result.err, "");
}

TEST(Replay, TheLowestMantissaBitOfOneRankFileIsNamed) {
  Recording recording;
  record_two_buckets(recording);
  flip_bit(recording.file(kRank1), 0, 0);
  // The issue's case: the reduction rounds the flipped bit away, so the result's digest (what
  // `digest --inputs` prints) is still the recorded one...
  std::vector<std::string> digest = {"digest", "--op", "mean", "--inputs"};
  for (int r = 0; r < kWorld; ++r) {
    digest.push_back(recording.file("step000002/bucket000/rank000" + std::to_string(r) + ".f32"));
  }
  const ProcessResult reduced = run_tool(digest);
  ASSERT_EQ(reduced.exit_code, 0) << summary(reduced);
  const std::string manifest = ScratchDir::read(recording.file("manifest.jsonl"));
  EXPECT_THAT(manifest, HasSubstr(reduced.out.substr(0, 32)));
  // ...and the replay names the file all the same.
  const ProcessResult result = replay(recording);
  EXPECT_EQ(result.exit_code, 1) << summary(result);
  EXPECT_THAT(result.out, HasSubstr("step 2 bucket 0: FAILED (" + recording.file(kRank1) +
                                    ": rank 1's input differs from its recorded digest)"));
  EXPECT_THAT(result.out, HasSubstr("step 2 bucket 1: OK"));
  EXPECT_THAT(result.out, HasSubstr("1 verified, 1 failed"));
  EXPECT_THAT(result.err, HasSubstr("manifest.jsonl:2: " + recording.file(kRank1) + " digests to"));
}

TEST(Replay, AnExponentBitIsNamed) {
  Recording recording;
  record_two_buckets(recording);
  flip_bit(recording.file("step000002/bucket001/rank0002.f32"), 500, 25);
  const ProcessResult result = replay(recording);
  EXPECT_EQ(result.exit_code, 1) << summary(result);
  EXPECT_THAT(result.out,
              HasSubstr("step 2 bucket 1: FAILED (" +
                        recording.file("step000002/bucket001/rank0002.f32") + ": rank 2's input"));
  EXPECT_THAT(result.out, HasSubstr("step 2 bucket 0: OK"));
}

TEST(Replay, AResultThatDoesNotReplayIsNamed) {
  // Inputs that agree, a recorded result that is not theirs (a record edited and chained
  // again, as a writer with another reduction would have written it).
  Recording recording;
  const Ranks fixed = fixed_order_ranks();
  std::vector<float> other = fixed_order_mean(fixed);
  other[999] = std::nextafter(other[999], 1e9f);
  recording.add(2, 0, "fixed-order", "mean", fixed, other);
  recording.end();
  recording.write_manifest();
  const ProcessResult result = replay(recording);
  EXPECT_EQ(result.exit_code, 1) << summary(result);
  EXPECT_THAT(result.out, HasSubstr("step 2 bucket 0: FAILED (the replayed result differs"));
  EXPECT_THAT(result.err, HasSubstr("manifest.jsonl:2: the replayed result differs from rank 0"));
}

TEST(Replay, TheExactBucketClaimedAsFixedOrderFails) {
  // The exact bucket recorded as fixed-order: the fold in rank order gives other bits.
  Recording recording;
  const Ranks exact = exact_ranks();
  recording.add(2, 1, "fixed-order", "sum", exact, exact_sum(exact));
  recording.end();
  recording.write_manifest();
  EXPECT_EQ(replay(recording).exit_code, 1);
}

// Exit 2, and stderr names `names`.
void expect_bad(const Recording& recording, const std::string& names) {
  const ProcessResult result = replay(recording);
  ASSERT_TRUE(result.exited()) << summary(result);
  EXPECT_EQ(result.exit_code, 2) << summary(result);
  EXPECT_THAT(result.err, HasSubstr(names));
  EXPECT_THAT(result.out, Not(HasSubstr(": OK")));
}

TEST(Replay, AnEditedManifestByteIsNamedByItsRecord) {
  Recording recording;
  record_two_buckets(recording);
  std::vector<std::string> lines = recording.lines();
  const std::size_t at = lines[2].find("\"inputs\":[\"") + 11;  // record 3, a digest digit
  lines[2][at] = lines[2][at] == '0' ? '1' : '0';
  recording.write_manifest(lines);
  expect_bad(recording, recording.file("manifest.jsonl") + ":3: the chain is broken");
}

TEST(Replay, ADroppedRecordIsNamed) {
  Recording recording;
  record_two_buckets(recording);
  std::vector<std::string> lines = recording.lines();
  lines.erase(lines.begin() + 1);
  recording.write_manifest(lines);
  expect_bad(recording, recording.file("manifest.jsonl") + ":2: the chain is broken");
}

TEST(Replay, MissingAndWrongSizeRankFilesAreBadInput) {
  {
    Recording recording;
    record_two_buckets(recording);
    std::filesystem::remove(recording.file(kRank1));
    expect_bad(recording, "manifest.jsonl:2: rank 1's file: " + recording.file(kRank1));
  }
  {
    Recording recording;
    record_two_buckets(recording);
    std::filesystem::resize_file(recording.file(kRank1), 3996);
    expect_bad(recording, recording.file(kRank1) + ": 3996 bytes, but");
  }
}

TEST(Replay, MalformedManifestsAreBadInput) {
  {
    Recording recording;  // no manifest at all
    expect_bad(recording, recording.file("manifest.jsonl"));
  }
  {
    Recording recording;
    record_two_buckets(recording);
    recording.records()[1]["contract"] = "sloppy";
    recording.write_manifest();
    expect_bad(recording, "manifest.jsonl:2: unknown contract \"sloppy\"");
  }
  {
    Recording recording;
    record_two_buckets(recording);
    recording.records()[2]["buckets"][0]["files"][0] = "../../etc/passwd";
    recording.write_manifest();
    expect_bad(recording, "manifest.jsonl:3: rank file \"../../etc/passwd\" is not a relative");
  }
  {
    Recording recording;
    record_two_buckets(recording);
    recording.records()[1]["buckets"][0]["inputs"].erase(0);
    recording.write_manifest();
    expect_bad(recording, "manifest.jsonl:2: \"inputs\" is not an array of 3 digests");
  }
  {
    Recording recording;  // a header alone
    recording.write_manifest();
    expect_bad(recording, "no recorded buckets");
  }
  {
    Recording recording;  // format 3: plain JSON lines
    std::ofstream(recording.file("manifest.jsonl"))
        << R"({"format": "reduce-verify torch recording 3", "step": 2})"
        << "\n";
    expect_bad(recording,
               "manifest.jsonl:1: a recording of format \"reduce-verify torch "
               "recording 3\", which is not chained");
  }
}

TEST(Replay, ALibrarySumBucketHasItsInputsCheckedAndNoResult) {
  Recording recording;
  const Ranks fixed = fixed_order_ranks();
  recording.add(0, 0, "library-sum", "mean", fixed, fixed_order_mean(fixed));
  recording.add(0, 1, "fixed-order", "mean", fixed, fixed_order_mean(fixed));
  recording.end();
  recording.write_manifest();
  ProcessResult result = replay(recording);
  EXPECT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_THAT(result.out, HasSubstr("step 0 bucket 0: inputs OK, result not replayable"));
  EXPECT_THAT(result.out, HasSubstr("1 verified, 0 failed, 1 inputs only"));
  flip_bit(recording.file("step000000/bucket000/rank0000.f32"), 3, 0);
  result = replay(recording);
  EXPECT_EQ(result.exit_code, 1) << summary(result);
  EXPECT_THAT(result.out, HasSubstr("step 0 bucket 0: FAILED ("));
}

TEST(Replay, ACutOffManifestIsNamedOnStderrAndTheRestReplayed) {
  Recording recording;
  record_two_buckets(recording);
  std::vector<std::string> lines = recording.lines();
  lines.pop_back();                           // no end record
  lines.back() = lines.back().substr(0, 50);  // a torn last record
  recording.write_manifest(lines);
  const ProcessResult result = replay(recording);
  EXPECT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_EQ(result.out, "step 2 bucket 0: OK\n1 verified, 0 failed\n");
  EXPECT_THAT(result.err, HasSubstr("manifest.jsonl:3: a torn last record"));
  EXPECT_THAT(result.err, HasSubstr("no end record after record 2"));
}

TEST(Replay, JsonReportNamesEveryBucket) {
  Recording recording;
  record_two_buckets(recording);
  flip_bit(recording.file(kRank1), 0, 0);
  ScratchDir out;
  const ProcessResult result = replay(recording, {"--quiet", "--json", out.file("r.json")});
  EXPECT_EQ(result.exit_code, 1) << summary(result);
  EXPECT_THAT(result.out, Not(HasSubstr(": OK")));
  const nlohmann::json report = nlohmann::json::parse(ScratchDir::read(out.file("r.json")));
  EXPECT_EQ(report["failed"], 1);
  EXPECT_EQ(report["verified"], 1);
  ASSERT_EQ(report["buckets"].size(), 2u);
  EXPECT_EQ(report["buckets"][0]["verdict"], "failed");
  EXPECT_EQ(report["buckets"][0]["file"], recording.file(kRank1));
  EXPECT_EQ(report["buckets"][0]["record"], 2);
  EXPECT_EQ(report["buckets"][1]["verdict"], "ok");
}

}  // namespace
}  // namespace rv::test
