// The NCCL id's trip through the job directory: the record round-trips, malformed ones are
// rejected, a reader finds rank 0's record, ignores another launch's, refuses a world that
// differs, and ends with a DeadlineExceeded when no record comes.
#include "core/transport/nccl/nccl_unique_id.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "core/error.h"
#include "tests/support/scratch_dir.h"

namespace rv {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

NcclIdRecord sample_record(const std::string& nonce, std::uint32_t world) {
  NcclIdRecord record;
  record.nonce = nonce;
  record.world = world;
  for (std::size_t i = 0; i < record.id.size(); ++i) {
    record.id[i] = static_cast<unsigned char>(i * 37 + 11);
  }
  return record;
}

TEST(NcclUniqueId, RecordRoundTrips) {
  for (const std::string nonce : {"", "0123456789abcdef0123456789abcdef"}) {
    const NcclIdRecord record = sample_record(nonce, 8);
    const auto parsed = parse_nccl_id_record(format_nccl_id_record(record));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(parsed->nonce, nonce);
    EXPECT_EQ(parsed->world, 8u);
    EXPECT_EQ(parsed->id, record.id);
  }
}

TEST(NcclUniqueId, MalformedRecordsAreRejected) {
  const std::string good = format_nccl_id_record(sample_record("n", 2));
  EXPECT_FALSE(parse_nccl_id_record(""));
  EXPECT_FALSE(parse_nccl_id_record(good.substr(0, good.size() - 10)));  // short id
  EXPECT_FALSE(parse_nccl_id_record(good + "extra\n"));
  EXPECT_FALSE(parse_nccl_id_record("something else\n" + good));
  std::string bad_digit = good;
  bad_digit[bad_digit.size() - 2] = 'g';
  EXPECT_FALSE(parse_nccl_id_record(bad_digit));
}

TEST(NcclUniqueId, AReaderFindsRankZerosRecord) {
  const test::ScratchDir dir;
  const NcclIdRecord record = sample_record("abc", 3);
  std::thread publisher([&] {
    std::this_thread::sleep_for(milliseconds(50));
    publish_nccl_id(dir.path(), record);
  });
  const NcclIdRecord got = await_nccl_id(dir.path(), "abc", 2, 3, Deadline(milliseconds(5000)));
  publisher.join();
  EXPECT_EQ(got.id, record.id);
}

TEST(NcclUniqueId, NoRecordEndsInADeadlineNamingTheRankAndFile) {
  const test::ScratchDir dir;
  const auto started = Clock::now();
  try {
    await_nccl_id(dir.path(), "abc", 1, 2, Deadline(milliseconds(300)));
    FAIL() << "no record was published";
  } catch (const DeadlineExceeded& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 of 2"), std::string::npos) << what;
    EXPECT_NE(what.find(kNcclUniqueIdFile), std::string::npos) << what;
  }
  const auto waited = Clock::now() - started;
  EXPECT_GE(waited, milliseconds(300));
  EXPECT_LT(waited, milliseconds(2000));
}

TEST(NcclUniqueId, AnotherLaunchsRecordIsNeverUsed) {
  const test::ScratchDir dir;
  publish_nccl_id(dir.path(), sample_record("stale-launch", 2));
  try {
    await_nccl_id(dir.path(), "this-launch", 1, 2, Deadline(milliseconds(200)));
    FAIL() << "a stale record was accepted";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("another launch"), std::string::npos) << e.what();
  }
}

TEST(NcclUniqueId, AWorldSizeThatDiffersIsBadInput) {
  const test::ScratchDir dir;
  publish_nccl_id(dir.path(), sample_record("n", 4));
  EXPECT_THROW(await_nccl_id(dir.path(), "n", 1, 2, Deadline(milliseconds(1000))), InputError);
}

}  // namespace
}  // namespace rv
