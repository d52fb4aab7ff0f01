// Shared by the exact kernels' tests (exact_kernel_test.cc, exact_round_kernel_test.cc,
// exact_combine_kernel_test.cc): device buffers poisoned around their contents, with guard
// words after every output, the plan's slots on the device, the round launch and the
// comparison of int64 words that names the first difference.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/contract.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/exact/exact_plan.h"

namespace rv::test {

constexpr int kDevice = 0;
constexpr std::uint32_t kWorlds[] = {1, 2, 3, 8, 64, 256};
constexpr std::size_t kGuard = 4;  // words (or floats) after every output
constexpr unsigned char kPoisonByte = 0x5A;

inline ::testing::AssertionResult same_words(const std::vector<std::int64_t>& expected,
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

inline bool all_poison(const void* bytes, std::size_t count) {
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

// The plan's slots on the device, for the lifetime of the object.
struct DevicePlan {
  explicit DevicePlan(const ExactPlan& plan)
      : slots(upload_at(plan.blocks, 0)), view(view_of(plan, at<ExactBlockSlot>(slots, 0))) {}
  DeviceBuffer slots;
  ExactPlanView view;
};

inline Output<float> gpu_round(const std::vector<std::int64_t>& sums, const ExactPlan& plan, Op op,
                               std::size_t offset, detail::MeanDivision division) {
  const DeviceBuffer in = upload_at(sums, offset);
  const DevicePlan device_plan(plan);
  DeviceBuffer out(kDevice, (offset + plan.count + kGuard) * sizeof(float));
  out.fill_bytes(kPoisonByte);
  detail::launch_exact_round_with(at<std::int64_t>(in, offset), device_plan.view, op,
                                  at<float>(out, offset), nullptr, division);
  return download_output<float>(out, offset, plan.count);
}

}  // namespace rv::test
