// agree_across_ranks: ranks that pass the same text go on; any disagreement is an InputError
// on every rank, the same message everywhere, naming which ranks have what — including
// texts that differ only past the printable prefix, and unprintable bytes; over every
// test-world transport.
#include "core/reducer/agreement.h"

#include <gtest/gtest.h>

#include <array>

#include "core/error.h"
#include "core/reducer/agreement_record.h"
#include "tests/thread_world/world_transport.h"

namespace rv::test {
namespace {

const std::string kCase = "contract=fixed-order,op=sum,w=4,n=1000,dist=cancel,seed=7,gen=1";
const std::string kShort = "contract=fixed-order,op=sum,w=4,n=999,dist=cancel,seed=7,gen=1";

// Every rank's error text (all must be InputErrors).
std::vector<std::string> disagreement(WorldTransport transport, std::uint32_t world,
                                      const std::function<std::string(std::uint32_t)>& what) {
  auto outcomes = run_ranks_over(
      transport, world, [&](std::uint32_t r, Transport& t) { agree_across_ranks(t, what(r)); });
  std::vector<std::string> texts;
  for (std::uint32_t r = 0; r < world; ++r) {
    EXPECT_TRUE(is_error<InputError>(outcomes[r].error))
        << r << ": " << error_text(outcomes[r].error);
    texts.push_back(error_text(outcomes[r].error));
  }
  return texts;
}

class Agreement : public ::testing::TestWithParam<WorldTransport> {};

TEST_P(Agreement, SameTextOnEveryRankPasses) {
  for (std::uint32_t world : {1u, 3u}) {
    auto outcomes = run_ranks_over(GetParam(), world, [&](std::uint32_t, Transport& t) {
      agree_across_ranks(t, kCase);
      agree_across_ranks(t, "");
      t.barrier();  // the transport is still usable
    });
    expect_no_errors(outcomes);
  }
}

TEST_P(Agreement, OneRankWithAnotherLengthIsNamedOnEveryRank) {
  const auto texts =
      disagreement(GetParam(), 4, [](std::uint32_t r) { return r == 2 ? kShort : kCase; });
  const std::string expected = "ranks disagree before moving any bytes: ranks 0, 1, 3 have " +
                               kCase + " but rank 2 has " + kShort;
  for (const auto& text : texts) EXPECT_EQ(text, expected);
}

TEST_P(Agreement, EveryGroupIsListed) {
  const auto texts =
      disagreement(GetParam(), 3, [](std::uint32_t r) { return "case " + std::to_string(r); });
  for (const auto& text : texts) {
    EXPECT_EQ(text,
              "ranks disagree before moving any bytes: rank 0 has case 0 but rank 1 has "
              "case 1; rank 2 has case 2");
  }
}

TEST_P(Agreement, TextsThatDifferPastThePrefixStillDisagree) {
  const std::string base(AgreementRecord::kPrefix + 40, 'x');
  const auto texts =
      disagreement(GetParam(), 2, [&](std::uint32_t r) { return base + std::to_string(r); });
  EXPECT_NE(texts[0].find("characters, hash"), std::string::npos) << texts[0];
  EXPECT_EQ(texts[0], texts[1]);
}

TEST_P(Agreement, UnprintableBytesAreShownAsQuestionMarks) {
  const auto texts =
      disagreement(GetParam(), 2, [&](std::uint32_t r) { return r ? std::string("a\nb") : "ab"; });
  EXPECT_NE(texts[0].find("rank 1 has a?b"), std::string::npos) << texts[0];
}

INSTANTIATE_TEST_SUITE_P(Transports, Agreement, ::testing::ValuesIn(world_transports()),
                         [](const ::testing::TestParamInfo<WorldTransport>& param) {
                           return to_string(param.param);
                         });

TEST(AgreementRecord, RoundTripsThroughItsFixedSizeEncoding) {
  for (const std::string& text : {std::string(), kCase, std::string(1000, 'y')}) {
    const AgreementRecord record = AgreementRecord::of(text);
    const auto bytes = record.encode();
    EXPECT_EQ(AgreementRecord::decode(bytes.data()), record);
    EXPECT_EQ(record.length, text.size());
  }
  EXPECT_NE(AgreementRecord::of("a"), AgreementRecord::of("b"));
}

// A record changed on the way (a flipped bit in its hash, text or padding; zeros where it
// never landed) is no encoded record; a long text's hash cannot be checked, its padding-free
// prefix can only be compared.
TEST(AgreementRecord, BytesChangedOnTheWayAreNotIntact) {
  for (const std::string& text : {std::string(), kCase, std::string(1000, 'y')}) {
    EXPECT_TRUE(AgreementRecord::intact(AgreementRecord::of(text).encode().data())) << text;
  }
  auto bytes = AgreementRecord::of(kCase).encode();
  for (std::size_t at : {std::size_t{3}, std::size_t{20}, AgreementRecord::kBytes - 1}) {
    auto changed = bytes;
    changed[at] ^= 0x40;
    EXPECT_FALSE(AgreementRecord::intact(changed.data())) << "byte " << at;
  }
  const std::array<unsigned char, AgreementRecord::kBytes> zeros{};
  EXPECT_FALSE(AgreementRecord::intact(zeros.data()));
}

}  // namespace
}  // namespace rv::test
