// The trail parser: a trail written by the rules reads back; every edit, move, drop or
// malformed record is an InputError naming file:record; a torn last record is left out.
#include "verify/audit/trail_file.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/audit/trail_text.h"

namespace rv {
namespace {

using test::chained;
using test::trail_records;

std::string error_of(const std::string& text) {
  try {
    parse_trail("t.jsonl", text);
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = text.find('\n', begin);
    lines.push_back(text.substr(begin, end - begin + 1));
    begin = end + 1;
  }
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line;
  return text;
}

TEST(TrailFile, ChainMatchesThePythonWriter) {
  // python3 -c "from reduce_verify import trail; print(trail.chain_next('0'*32, '{}'))"
  EXPECT_EQ(chain_next(std::string(32, '0'), "{}"), "dfc4d59336482af3b256d9f5b0c649d6");
  EXPECT_EQ(chain_next(std::string(32, '0'), "{\"a\":1}"), "50717426463e1561c2f7f35049b120fd");
}

TEST(TrailFile, ReadsAWellFormedTrail) {
  const TrailFile trail = parse_trail("t.jsonl", chained(trail_records(3, 4)));
  EXPECT_EQ(trail.world, 3u);
  EXPECT_EQ(trail.digest_kind, "xxh128");
  ASSERT_EQ(trail.steps.size(), 4u);
  EXPECT_EQ(trail.steps[2].step, 2u);
  EXPECT_EQ(trail.steps[2].record, 4u);
  EXPECT_EQ(trail.steps[2].buckets.size(), 2u);
  EXPECT_EQ(trail.steps[2].buckets[1].inputs.size(), 3u);
  EXPECT_TRUE(trail.ended);
  EXPECT_EQ(trail.torn_record, 0u);
  EXPECT_EQ(trail.records, 6u);
}

TEST(TrailFile, AnEditedDigestBreaksTheChainAtItsRecord) {
  std::string text = chained(trail_records(2, 4));
  auto lines = lines_of(text);
  const std::size_t at = lines[3].find("\"inputs\":[\"") + 11;  // record 4, a digest digit
  lines[3][at] = lines[3][at] == '0' ? '1' : '0';
  const std::string message = error_of(joined(lines));
  EXPECT_NE(message.find("t.jsonl:4: the chain is broken"), std::string::npos) << message;
}

TEST(TrailFile, SwappedRecordsAreNamed) {
  auto lines = lines_of(chained(trail_records(2, 4)));
  std::swap(lines[2], lines[3]);
  EXPECT_NE(error_of(joined(lines)).find("t.jsonl:3: the chain is broken"), std::string::npos);
}

TEST(TrailFile, ADroppedRecordIsNamed) {
  auto lines = lines_of(chained(trail_records(2, 4)));
  lines.erase(lines.begin() + 2);
  EXPECT_NE(error_of(joined(lines)).find("t.jsonl:3: the chain is broken"), std::string::npos);
}

TEST(TrailFile, DroppedLastRecordsLeaveATrailWithoutItsEnd) {
  auto lines = lines_of(chained(trail_records(2, 4)));
  lines.resize(3);
  const TrailFile trail = parse_trail("t.jsonl", joined(lines));
  EXPECT_FALSE(trail.ended);
  EXPECT_EQ(trail.steps.size(), 2u);
}

TEST(TrailFile, ATornLastRecordIsLeftOutAndTheRestRead) {
  std::string text = chained(trail_records(2, 4));
  text.resize(text.size() - 30);  // inside the end record, its newline gone
  const TrailFile trail = parse_trail("t.jsonl", text);
  EXPECT_EQ(trail.torn_record, 6u);
  EXPECT_EQ(trail.records, 5u);
  EXPECT_EQ(trail.steps.size(), 4u);
  EXPECT_FALSE(trail.ended);
}

TEST(TrailFile, ATornRecordInTheMiddleIsAnError) {
  auto lines = lines_of(chained(trail_records(2, 4)));
  lines[2] = lines[2].substr(0, 40) + "\n";
  EXPECT_NE(error_of(joined(lines)).find("t.jsonl:3: does not end in"), std::string::npos);
}

TEST(TrailFile, MalformedRecordsAreNamed) {
  using test::chained_bodies;
  const std::string header = test::header(2).dump();
  EXPECT_NE(error_of("").find("t.jsonl: an empty trail"), std::string::npos);
  EXPECT_NE(error_of("hello\n").find("t.jsonl:1: does not end in"), std::string::npos);
  EXPECT_NE(error_of(chained_bodies({"{\"x\":1}"})).find("t.jsonl:1: not a reduce-verify trail"),
            std::string::npos);
  EXPECT_NE(error_of(chained_bodies({header, "{\"step\":0,}"})).find("t.jsonl:2: not JSON"),
            std::string::npos);
  nlohmann::json short_inputs = test::step(0, 2);
  short_inputs["buckets"][0]["inputs"].erase(1);
  EXPECT_NE(error_of(chained({test::header(2), short_inputs}))
                .find("t.jsonl:2: \"inputs\" is not an array of 2 digests"),
            std::string::npos);
  nlohmann::json bad_hex = test::step(0, 2);
  bad_hex["params"][1] = "XYZ";
  EXPECT_NE(error_of(chained({test::header(2), bad_hex})).find("t.jsonl:2: \"params\" holds"),
            std::string::npos);
  EXPECT_NE(error_of(chained({test::header(2), test::step(1, 2)}))
                .find("t.jsonl:2: step 1 where step 0 was due"),
            std::string::npos);
  EXPECT_NE(error_of(chained({test::header(2), test::step(0, 2), test::end(5, 2)}))
                .find("t.jsonl:3: the end record says 5 steps"),
            std::string::npos);
  EXPECT_NE(error_of(chained({test::header(2), test::end(0, 1), test::step(0, 2)}))
                .find("t.jsonl:3: a record after the end record"),
            std::string::npos);
  nlohmann::json world_zero = test::header(2);
  world_zero["world"] = 0;
  EXPECT_NE(error_of(chained({world_zero})).find("t.jsonl:1: world 0"), std::string::npos);
}

}  // namespace
}  // namespace rv
