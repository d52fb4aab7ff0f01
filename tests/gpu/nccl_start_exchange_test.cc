// NcclTransport::start_exchange in a world of one (one GPU is all the device machine has: the
// started exchange's own-slot copy, its empty send/receive group, its stream and events). The
// exchange starts after the caller's stream's work (bytes written there just before are the
// ones sent), several may be in flight with a blocking call among them, a plan whose counts
// are still to be checked and a transport without the caller's stream run it synchronously,
// and a started exchange abandoned unwaited leaves the transport unusable. A dead peer during
// a started exchange needs two GPUs: ci/device/multi-gpu-proof.sh's killed rank covers it
// (its arena is cut into two pieces).
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/device_buffer.h"
#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/error.h"
#include "core/transport/nccl/nccl_transport.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/support/scratch_dir.h"

namespace rv {
namespace {

using std::chrono::milliseconds;
using test::same_bits;

std::vector<float> pattern(std::size_t n, float base) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = base + static_cast<float>(i % 4093);
  return values;
}

// src → dst of `bytes` bytes, the own slot of a world of one.
ExchangePlan own_copy(const void* src, void* dst, std::size_t bytes, bool counts_agreed = true) {
  ExchangePlan plan;
  plan.send = src;
  plan.send_offset = {0};
  plan.send_bytes = {bytes};
  plan.recv = dst;
  plan.recv_offset = {0};
  plan.recv_bytes = {bytes};
  plan.counts_agreed = counts_agreed;
  return plan;
}

class NcclStartExchange : public ::testing::Test {
 protected:
  void SetUp() override {
    RV_SKIP_WITHOUT_GPU();
    try {
      std::cout << "using " << NcclLibrary::load().describe() << "\n";
    } catch (const RuntimeFailure& e) {
      GTEST_SKIP() << "no NCCL on this box's loader path: " << e.what();
    }
    device_ = std::make_unique<CudaFixedOrderDevice>(0);
  }
  // A world of one; on the fixed-order device's stream unless `own_stream`.
  std::unique_ptr<Transport> connect(bool own_stream = false) {
    NcclConnectOptions options;
    options.job_dir = dir_.path();
    options.job_nonce = "0123456789abcdef0123456789abcdef";
    options.timeout = milliseconds(60000);
    if (!own_stream) options.stream = device_->stream();
    return connect_nccl(options);
  }

  test::ScratchDir dir_;
  std::unique_ptr<CudaFixedOrderDevice> device_;  // made once a device is known to be there
};

TEST_F(NcclStartExchange, SendsTheBytesTheCallersStreamWroteJustBefore) {
  auto nccl = connect();
  const std::size_t n = std::size_t{16} << 20;  // 64 MiB: long enough for the streams to race
  const std::size_t bytes = n * sizeof(float);
  const std::vector<float> old_values = pattern(n, 1.0f), new_values = pattern(n, 5000.0f);
  DeviceBuffer source(0, bytes), fresh(0, bytes), landed(0, bytes);
  source.upload_floats(old_values);
  fresh.upload_floats(new_values);
  for (int round = 0; round < 3; ++round) {
    source.upload_floats(old_values);
    landed.fill_bytes(0xFF);
    device_->copy(source.data(), fresh.data(), bytes);  // enqueued, not waited for
    auto pending = nccl->start_exchange(own_copy(source.data(), landed.data(), bytes));
    pending->wait();
    EXPECT_TRUE(same_bits(new_values, landed.download_floats(n))) << "round " << round;
  }
}

TEST_F(NcclStartExchange, SeveralInFlightWithABlockingCallAmongThem) {
  auto nccl = connect();
  const std::size_t n = 1000003;
  const std::size_t bytes = n * sizeof(float);
  const std::vector<float> a = pattern(n, 1.0f), b = pattern(n, -9000.0f), c = pattern(n, 0.5f);
  DeviceBuffer src_a(0, bytes), src_b(0, bytes), src_c(0, bytes);
  DeviceBuffer both(0, 2 * bytes + sizeof(float)), gathered(0, bytes);
  src_a.upload_floats(a);
  src_b.upload_floats(b);
  src_c.upload_floats(c);
  both.fill_bytes(0xFF);
  auto* into = static_cast<unsigned char*>(both.data());
  auto first = nccl->start_exchange(own_copy(src_a.data(), into, bytes));
  // At an odd offset: a started exchange takes any layout exchange takes.
  auto second = nccl->start_exchange(own_copy(src_b.data(), into + bytes + sizeof(float), bytes));
  nccl->all_gather(src_c.data(), gathered.data(), bytes);  // blocking, with both in flight
  EXPECT_TRUE(same_bits(c, gathered.download_floats(n)));
  second->wait();
  first->wait();
  EXPECT_TRUE(same_bits(a, both.download_floats(n)));
  EXPECT_TRUE(same_bits(b, both.download_floats(n, n + 1)));
  nccl->barrier();  // still usable
}

TEST_F(NcclStartExchange, UncheckedCountsAndNoCallersStreamRunSynchronously) {
  const std::size_t n = 4099;
  const std::vector<float> values = pattern(n, 3.0f);
  DeviceBuffer source(0, n * sizeof(float)), landed(0, n * sizeof(float));
  source.upload_floats(values);
  for (bool own_stream : {false, true}) {
    auto nccl = connect(own_stream);
    for (bool counts_agreed : {false, true}) {
      landed.fill_bytes(0xFF);
      ExchangePlan plan = own_copy(source.data(), landed.data(), n * sizeof(float), counts_agreed);
      plan.has_agreed_value = !counts_agreed;
      plan.agreed_value = n;
      auto pending = nccl->start_exchange(plan);
      pending->wait();
      EXPECT_TRUE(same_bits(values, landed.download_floats(n)))
          << "own stream " << own_stream << ", counts agreed " << counts_agreed;
    }
  }
}

TEST_F(NcclStartExchange, WaitingTwiceIsAnInternalError) {
  auto nccl = connect();
  DeviceBuffer source(0, 4096), landed(0, 4096);
  auto pending = nccl->start_exchange(own_copy(source.data(), landed.data(), 4096));
  pending->wait();
  EXPECT_THROW(pending->wait(), InternalError);
}

// Last in this suite: it aborts its communicator.
TEST_F(NcclStartExchange, AnAbandonedExchangeLeavesTheTransportUnusable) {
  auto nccl = connect();
  DeviceBuffer source(0, 4096), landed(0, 4096);
  nccl->start_exchange(own_copy(source.data(), landed.data(), 4096)).reset();  // never waited
  try {
    nccl->barrier();
    FAIL() << "a transport whose started exchange was abandoned still ran a barrier";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("unusable"), std::string::npos) << e.what();
  }
  EXPECT_THROW(nccl->start_exchange(own_copy(source.data(), landed.data(), 4096)), RuntimeFailure);
  nccl.reset();  // no finalize of an aborted communicator: returns at once
}

}  // namespace
}  // namespace rv
