// The Gloo transport's byte movement, thread per rank over loopback: exchange, all_gather and
// broadcast with uneven and empty sizes (checked byte for byte, with guard bytes around every
// segment), barrier, max_int, and sizes that disagree (an InputError on every rank, never an
// abort). Its behaviour when a peer fails: gloo_transport_faults_test.cc.
#include "core/transport/gloo/gloo_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/error.h"
#include "tests/thread_world/gloo_world.h"

namespace rv::test {
namespace {

unsigned char pattern(std::uint32_t from, std::uint32_t to, std::size_t i) {
  return static_cast<unsigned char>(from * 131 + to * 31 + i * 7 + 1);
}

constexpr unsigned char kGuard = 0xEE;
constexpr std::size_t kGap = 5;

// Uneven counts, with zero-byte pairs off the diagonal for W ≥ 4 and self copies on odd ranks.
std::size_t pair_bytes(std::uint32_t from, std::uint32_t to) {
  if ((from + to) % 4 == 0) return 0;
  return 1 + (from * 997 + to * 331) % 5000;
}

TEST(GlooTransport, NameVersionAndWorld) {
  auto outcomes = run_ranks(2, [](std::uint32_t rank, Transport& t) {
    EXPECT_EQ(t.name(), "gloo");
    EXPECT_EQ(t.rank(), rank);
    EXPECT_EQ(t.world_size(), 2u);
    EXPECT_EQ(t.library_version().rfind("Gloo ", 0), 0u) << t.library_version();
  });
  expect_no_errors(outcomes);
  EXPECT_NE(gloo_library_version().find("Gloo"), std::string::npos);
}

class GlooTransportWorld : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(GlooTransportWorld, ExchangeMovesUnevenSegmentsToTheirOffsets) {
  const std::uint32_t world = GetParam();
  auto outcomes = run_ranks(world, [&](std::uint32_t me, Transport& t) {
    ExchangePlan plan;
    std::vector<unsigned char> send, recv;
    // Send segments in destination order with gaps; receive segments in reverse source order
    // with guard bytes between, so wrong offsets or lengths show.
    for (std::uint32_t p = 0; p < world; ++p) {
      plan.send_offset.push_back(send.size());
      plan.send_bytes.push_back(pair_bytes(me, p));
      for (std::size_t i = 0; i < pair_bytes(me, p); ++i) send.push_back(pattern(me, p, i));
      send.insert(send.end(), 3, 0x55);
    }
    plan.recv_offset.assign(world, 0);
    plan.recv_bytes.assign(world, 0);
    recv.assign(kGap, kGuard);
    for (std::uint32_t k = 0; k < world; ++k) {
      const std::uint32_t p = world - 1 - k;
      plan.recv_offset[p] = recv.size();
      plan.recv_bytes[p] = pair_bytes(p, me);
      recv.insert(recv.end(), pair_bytes(p, me) + kGap, kGuard);
    }
    plan.send = send.data();
    plan.recv = recv.data();
    t.exchange(plan);
    std::vector<bool> inside(recv.size(), false);
    for (std::uint32_t p = 0; p < world; ++p) {
      for (std::size_t i = 0; i < plan.recv_bytes[p]; ++i) {
        inside[plan.recv_offset[p] + i] = true;
        ASSERT_EQ(recv[plan.recv_offset[p] + i], pattern(p, me, i))
            << "rank " << me << " byte " << i << " from rank " << p;
      }
    }
    for (std::size_t i = 0; i < recv.size(); ++i) {
      if (!inside[i]) {
        ASSERT_EQ(recv[i], kGuard) << "rank " << me << " guard byte " << i;
      }
    }
  });
  expect_no_errors(outcomes);
}

TEST_P(GlooTransportWorld, ExchangeWithAgreedCountsSkipsNoBytes) {
  const std::uint32_t world = GetParam();
  auto outcomes = run_ranks(world, [&](std::uint32_t me, Transport& t) {
    // Twice: a checked exchange, then the same counts promised as agreed.
    for (bool agreed : {false, true}) {
      std::vector<unsigned char> send(world * 100), recv(world * 100, kGuard);
      ExchangePlan plan;
      plan.send = send.data();
      plan.recv = recv.data();
      plan.counts_agreed = agreed;
      for (std::uint32_t p = 0; p < world; ++p) {
        for (std::size_t i = 0; i < 100; ++i) send[p * 100 + i] = pattern(me, p, i + agreed);
        plan.send_offset.push_back(p * 100);
        plan.send_bytes.push_back(p % 2 ? 100 : 37);
        plan.recv_offset.push_back(p * 100);
        plan.recv_bytes.push_back(me % 2 ? 100 : 37);
      }
      t.exchange(plan);
      for (std::uint32_t p = 0; p < world; ++p) {
        for (std::size_t i = 0; i < 100; ++i) {
          const unsigned char want = i < plan.recv_bytes[p] ? pattern(p, me, i + agreed) : kGuard;
          ASSERT_EQ(recv[p * 100 + i], want) << "from rank " << p << " byte " << i;
        }
      }
    }
  });
  expect_no_errors(outcomes);
}

TEST_P(GlooTransportWorld, AllGatherPlacesEveryRanksBlock) {
  const std::uint32_t world = GetParam();
  auto outcomes = run_ranks(world, [&](std::uint32_t me, Transport& t) {
    for (std::size_t bytes :
         {std::size_t{0}, std::size_t{1}, std::size_t{13}, std::size_t{100003}}) {
      std::vector<unsigned char> in(bytes);
      for (std::size_t i = 0; i < bytes; ++i) in[i] = pattern(me, 0, i);
      std::vector<unsigned char> out(world * bytes + kGap, kGuard);
      t.all_gather(in.data(), out.data(), bytes);
      for (std::uint32_t p = 0; p < world; ++p) {
        for (std::size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(out[p * bytes + i], pattern(p, 0, i)) << "block of rank " << p;
        }
      }
      for (std::size_t i = world * bytes; i < out.size(); ++i) ASSERT_EQ(out[i], kGuard);
    }
  });
  expect_no_errors(outcomes);
}

TEST_P(GlooTransportWorld, BroadcastFromEveryRoot) {
  const std::uint32_t world = GetParam();
  auto outcomes = run_ranks(world, [&](std::uint32_t me, Transport& t) {
    for (std::uint32_t root = 0; root < world; ++root) {
      for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{4099}}) {
        std::vector<unsigned char> buf(bytes + kGap, kGuard);
        if (me == root) {
          for (std::size_t i = 0; i < bytes; ++i) buf[i] = pattern(root, 7, i);
        }
        t.broadcast(buf.data(), bytes, root);
        for (std::size_t i = 0; i < bytes; ++i) ASSERT_EQ(buf[i], pattern(root, 7, i));
        for (std::size_t i = bytes; i < buf.size(); ++i) ASSERT_EQ(buf[i], kGuard);
      }
    }
  });
  expect_no_errors(outcomes);
}

TEST_P(GlooTransportWorld, MaxIntIsTheMaximumOverRanks) {
  const std::uint32_t world = GetParam();
  auto outcomes = run_ranks(world, [&](std::uint32_t me, Transport& t) {
    EXPECT_EQ(t.max_int(-1000 + static_cast<std::int64_t>(me)), -1000 + std::int64_t{world} - 1);
    EXPECT_EQ(t.max_int(me == 0 ? 1 : 0), 1);  // any(flag) from rank 0 alone
    EXPECT_EQ(t.max_int(0), 0);
  });
  expect_no_errors(outcomes);
}

std::string world_name(const ::testing::TestParamInfo<std::uint32_t>& param) {
  return "w" + std::to_string(param.param);
}
INSTANTIATE_TEST_SUITE_P(W, GlooTransportWorld, ::testing::Values(1u, 2u, 3u, 5u), world_name);

TEST(GlooTransport, BarrierWaitsForTheLastRank) {
  std::atomic<bool> last_arrived{false};
  auto outcomes = run_ranks(4, [&](std::uint32_t me, Transport& t) {
    if (me == 3) {
      std::this_thread::sleep_for(300ms);
      last_arrived = true;
    }
    t.barrier();
    EXPECT_TRUE(last_arrived.load()) << "rank " << me << " left the barrier early";
  });
  expect_no_errors(outcomes);
}

TEST(GlooTransport, DisagreeingSizesAreAnInputErrorOnEveryRankAndNothingAborts) {
  constexpr std::uint32_t kWorld = 3;
  std::vector<std::string> after(kWorld);
  auto outcomes = run_ranks(kWorld, [&](std::uint32_t me, Transport& t) {
    std::vector<unsigned char> send(8 * kWorld, 1), recv(8 * kWorld, 0);
    ExchangePlan plan;
    plan.send = send.data();
    plan.recv = recv.data();
    for (std::uint32_t p = 0; p < kWorld; ++p) {
      plan.send_offset.push_back(8 * p);
      plan.send_bytes.push_back(me == 1 && p == 0 ? 8
                                                  : 4);  // rank 1 sends more than rank 0 expects
      plan.recv_offset.push_back(8 * p);
      plan.recv_bytes.push_back(4);
    }
    try {
      t.exchange(plan);
    } catch (const InputError&) {
      // The transport is dead afterwards and says so at once.
      try {
        t.barrier();
      } catch (const RuntimeFailure& e) {
        after[me] = e.what();
      }
      throw;
    }
  });
  for (std::uint32_t r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(is_error<InputError>(outcomes[r].error))
        << r << ": " << error_text(outcomes[r].error);
    EXPECT_NE(error_text(outcomes[r].error).find("rank 1 sends 8 bytes to rank 0, which expects 4"),
              std::string::npos)
        << error_text(outcomes[r].error);
    EXPECT_NE(after[r].find("unusable after an earlier failure"), std::string::npos) << after[r];
  }
}

// Small all-gathers ride in the header round, large ones do not; a size mismatch is caught
// either way, also between a rank on each path.
TEST(GlooTransport, AllGatherSizesThatDisagreeAreAnInputErrorOnEveryRank) {
  for (std::size_t odd : {std::size_t{12}, std::size_t{4096}}) {
    auto outcomes = run_ranks(3, [&](std::uint32_t me, Transport& t) {
      std::vector<unsigned char> in(4096, 1), out(3 * 4096);
      t.all_gather(in.data(), out.data(), me == 2 ? odd : 8);
    });
    for (const auto& o : outcomes) {
      ASSERT_TRUE(is_error<InputError>(o.error)) << odd << ": " << error_text(o.error);
      EXPECT_NE(error_text(o.error).find("rank 0 sends 8 bytes to rank 2, which expects " +
                                         std::to_string(odd)),
                std::string::npos)
          << error_text(o.error);
    }
  }
}

TEST(GlooTransport, DisagreeingLibrarySumLengthsAreAnInputError) {
  auto outcomes = run_ranks(2, [&](std::uint32_t me, Transport& t) {
    std::vector<float> values(1000, 1.0f);
    t.library_sum(values.data(), me == 0 ? 1000 : 999);
  });
  for (const auto& o : outcomes) {
    ASSERT_TRUE(is_error<InputError>(o.error)) << error_text(o.error);
    EXPECT_NE(error_text(o.error).find("1000"), std::string::npos) << error_text(o.error);
    EXPECT_NE(error_text(o.error).find("999"), std::string::npos) << error_text(o.error);
  }
}

}  // namespace
}  // namespace rv::test
