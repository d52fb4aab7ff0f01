// The C ABI's CUDA entry points for bf16 and f16 (rv_cuda_*_stacked_dtype, and a device
// accumulator's add and finish in a dtype) give the host entry points' bits, which
// capi_dtype_test.cc holds to the core's references. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "capi/reduce_verify_c.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/device_info.h"
#include "core/dtype.h"

namespace rv {
namespace {

using Halves = std::vector<std::uint16_t>;

Halves random_halves(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Halves out(n);
  for (auto& bits : out) {
    const auto r = static_cast<std::uint32_t>(rng());
    // Mostly moderate values (exponent bits 0x3C00 … 0x43FF in either format's terms), some of
    // every pattern.
    bits = static_cast<std::uint16_t>(r % 8 == 0 ? rng() : (r & 0x83FFu) | 0x3C00u | (r >> 28));
  }
  return out;
}

DeviceBuffer uploaded(const Halves& values) {
  DeviceBuffer buffer(0, values.size() * 2);
  buffer.upload(values.data(), values.size() * 2);
  return buffer;
}

Halves downloaded(const DeviceBuffer& buffer, std::size_t n) {
  Halves out(n);
  buffer.download(out.data(), n * 2);
  return out;
}

class CapiCudaDTypeTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(CapiCudaDTypeTest, StackedReductionsEqualTheHosts) {
  const int dtype = GetParam();
  const std::uint32_t world = 5;
  const std::size_t n = 3000, stride = 3003;
  Halves stacked(world * stride, 0);
  for (std::uint32_t r = 0; r < world; ++r) {
    const Halves slot = random_halves(n, 40u + r);
    std::copy(slot.begin(), slot.end(), stacked.begin() + r * stride);
  }
  const DeviceBuffer d_stacked = uploaded(stacked);
  for (const int op : {RV_OP_SUM, RV_OP_MEAN}) {
    Halves fold(n), exact(n);
    ASSERT_EQ(rv_fixed_order_reduce_stacked_dtype(stacked.data(), world, stride, n, op, dtype,
                                                  fold.data()),
              RV_OK);
    ASSERT_EQ(
        rv_exact_reduce_stacked_dtype(stacked.data(), world, stride, n, op, dtype, exact.data()),
        RV_OK);
    DeviceBuffer d_out(0, n * 2);
    d_out.fill_bytes(0xEE);
    ASSERT_EQ(rv_cuda_fixed_order_reduce_stacked_dtype(0, d_stacked.data(), world, stride, n, op,
                                                       dtype, d_out.data(), nullptr),
              RV_OK)
        << rv_last_error();
    EXPECT_EQ(downloaded(d_out, n), fold);
    d_out.fill_bytes(0xEE);
    ASSERT_EQ(rv_cuda_exact_reduce_stacked_dtype(0, d_stacked.data(), world, stride, n, op, dtype,
                                                 d_out.data(), nullptr),
              RV_OK)
        << rv_last_error();
    EXPECT_EQ(downloaded(d_out, n), exact);
    // In place, into slot 0.
    const DeviceBuffer d_table = uploaded(stacked);
    ASSERT_EQ(rv_cuda_exact_reduce_stacked_dtype(0, d_table.data(), world, stride, n, op, dtype,
                                                 d_table.data(), nullptr),
              RV_OK)
        << rv_last_error();
    EXPECT_EQ(downloaded(d_table, n), exact);
  }
}

TEST_P(CapiCudaDTypeTest, DeviceAccumulatorEqualsTheHosts) {
  const int dtype = GetParam();
  const std::size_t n = 2500;
  std::vector<Halves> finished;
  for (const int device : {-1, 0}) {
    rv_accumulator* acc = nullptr;
    ASSERT_EQ(rv_accumulator_create(n, device, &acc), RV_OK) << rv_last_error();
    for (std::uint32_t k = 0; k < 4; ++k) {
      const Halves values = random_halves(n, 70u + k);
      if (device < 0) {
        ASSERT_EQ(rv_accumulator_add_dtype(acc, values.data(), 0, n, dtype, nullptr), RV_OK);
      } else {
        const DeviceBuffer d_values = uploaded(values);  // freed at once: the add keeps a copy
        ASSERT_EQ(rv_accumulator_add_dtype(acc, d_values.data(), 0, n, dtype, nullptr), RV_OK)
            << rv_last_error();
      }
      ASSERT_EQ(rv_accumulator_end_micro_batch(acc), RV_OK) << rv_last_error();
    }
    size_t size = 0, digit_words = 0;
    ASSERT_EQ(rv_accumulator_agreement_size(acc, &size), RV_OK);
    std::vector<int64_t> words(size);
    ASSERT_EQ(rv_accumulator_agreement_words(acc, 0, RV_OP_MEAN, 4, words.data(), nullptr), RV_OK);
    ASSERT_EQ(rv_accumulator_plan(acc, words.data(), 1, &digit_words), RV_OK) << rv_last_error();
    Halves out(n);
    if (device < 0) {
      std::vector<int64_t> digits(digit_words);
      ASSERT_EQ(rv_accumulator_export_digits(acc, digits.data(), nullptr), RV_OK);
      ASSERT_EQ(rv_accumulator_finish_dtype(acc, digits.data(), RV_OP_MEAN, 4, dtype, out.data(),
                                            nullptr),
                RV_OK);
    } else {
      DeviceBuffer d_digits(0, digit_words * 8), d_out(0, n * 2);
      ASSERT_EQ(rv_accumulator_export_digits(acc, static_cast<int64_t*>(d_digits.data()), nullptr),
                RV_OK)
          << rv_last_error();
      ASSERT_EQ(rv_accumulator_finish_dtype(acc, static_cast<const int64_t*>(d_digits.data()),
                                            RV_OP_MEAN, 4, dtype, d_out.data(), nullptr),
                RV_OK)
          << rv_last_error();
      out = downloaded(d_out, n);
      DeviceBuffer d_alone(0, n * 2);  // a world of one, finished without the words
      ASSERT_EQ(rv_accumulator_finish_alone(acc, RV_OP_MEAN, 4, dtype, d_alone.data(), nullptr),
                RV_OK)
          << rv_last_error();
      EXPECT_EQ(downloaded(d_alone, n), out);
    }
    finished.push_back(out);
    EXPECT_EQ(rv_accumulator_destroy(acc), RV_OK);
  }
  EXPECT_EQ(finished[1], finished[0]);
}

TEST_P(CapiCudaDTypeTest, DeviceRowsEqualTheHosts) {
  // Micro-batches of 1, 3 and 8 rows (a stride of n + 3 apart), each one rv_accumulator_add_rows
  // call: the device's one launch a call gives the host's row-by-row mean, bit for bit.
  const int dtype = GetParam();
  const std::size_t n = 3 * 1024 + 11, stride = n + 3;
  std::vector<Halves> finished;
  for (const int device : {-1, 0}) {
    rv_accumulator* acc = nullptr;
    ASSERT_EQ(rv_accumulator_create(n, device, &acc), RV_OK) << rv_last_error();
    std::uint32_t seed = 900;
    for (const std::size_t rows : {1, 3, 8}) {
      Halves table(rows * stride, 0);
      for (std::size_t r = 0; r < rows; ++r) {
        const Halves row = random_halves(n, seed++);
        std::copy(row.begin(), row.end(), table.begin() + static_cast<std::ptrdiff_t>(r * stride));
      }
      if (device < 0) {
        ASSERT_EQ(rv_accumulator_add_rows(acc, table.data(), stride, rows, 0, n, dtype, nullptr),
                  RV_OK)
            << rv_last_error();
      } else {
        const DeviceBuffer d_table = uploaded(table);  // freed at once: the add keeps a copy
        ASSERT_EQ(rv_accumulator_add_rows(acc, d_table.data(), stride, rows, 0, n, dtype, nullptr),
                  RV_OK)
            << rv_last_error();
      }
      ASSERT_EQ(rv_accumulator_end_micro_batch(acc), RV_OK) << rv_last_error();
    }
    Halves out(n);
    if (device < 0) {
      ASSERT_EQ(rv_accumulator_finish_alone(acc, RV_OP_MEAN, 12, dtype, out.data(), nullptr),
                RV_OK);
    } else {
      DeviceBuffer d_out(0, n * 2);
      ASSERT_EQ(rv_accumulator_finish_alone(acc, RV_OP_MEAN, 12, dtype, d_out.data(), nullptr),
                RV_OK)
          << rv_last_error();
      out = downloaded(d_out, n);
    }
    finished.push_back(out);
    EXPECT_EQ(rv_accumulator_destroy(acc), RV_OK);
  }
  EXPECT_EQ(finished[1], finished[0]);
}

INSTANTIATE_TEST_SUITE_P(HalfDTypes, CapiCudaDTypeTest,
                         ::testing::Values(RV_DTYPE_BF16, RV_DTYPE_F16),
                         [](const auto& param_info) {
                           return std::string(param_info.param == RV_DTYPE_BF16 ? "bf16" : "f16");
                         });

}  // namespace
}  // namespace rv
