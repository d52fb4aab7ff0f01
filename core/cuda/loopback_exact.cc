#include "core/cuda/loopback_exact.h"

#include <cstdint>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_exact_device.h"
#include "core/cuda/cuda_fold_device.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/exact_kernel.h"
#include "core/error.h"
#include "core/exact/exact_law.h"
#include "core/exact/exact_plan.h"

namespace rv {
namespace {

// Each rank's arena starts on a 256-byte boundary, as its own cudaMalloc would.
constexpr std::size_t kArenaAlignment = 64;  // elements
// Each rank's word buffer starts on a 16-byte boundary, so the combine takes its vector path.
constexpr std::size_t kWordAlignment = 2;  // words

std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

void check_arenas(const std::vector<std::vector<float>>& arenas) {
  if (arenas.empty()) throw InputError("the exact loopback world needs a rank");
  if (arenas.size() > exact::kMaxWorld) {
    throw InputError("the exact loopback world supports up to 2^20 ranks, not " +
                     std::to_string(arenas.size()));
  }
  for (std::size_t r = 1; r < arenas.size(); ++r) {
    if (arenas[r].size() != arenas[0].size()) {
      throw InputError("arena length of rank " + std::to_string(r) + " (" +
                       std::to_string(arenas[r].size()) + ") differs from rank 0's (" +
                       std::to_string(arenas[0].size()) + ")");
    }
  }
}

}  // namespace

std::vector<std::vector<float>> loopback_exact_all_reduce(
    const std::vector<std::vector<float>>& arenas, Op op, int device) {
  check_arenas(arenas);
  const auto world = static_cast<std::uint32_t>(arenas.size());
  const std::size_t n = arenas[0].size();
  std::vector<std::vector<float>> reduced_arenas(world, std::vector<float>(n));
  if (n == 0) return reduced_arenas;

  CudaFoldDevice fold_device(device);
  CudaExactDevice exact_device(fold_device);
  const cuda_detail::ScopedDevice scope(device);
  void* const stream = fold_device.stream();

  const std::size_t pitch = round_up(n, kArenaAlignment);
  DeviceBuffer arena_memory(device, static_cast<std::size_t>(world) * pitch * sizeof(float));
  for (std::uint32_t r = 0; r < world; ++r) arena_memory.upload_floats(arenas[r], r * pitch);
  const auto arena_of = [&](std::uint32_t rank) { return arena_memory.floats() + rank * pitch; };

  // The agreement round: every rank's words, max-combined into rank 0's slot.
  const std::size_t agreement_words = exact_block_count(n) * exact::kAgreementWords;
  const std::size_t agreement_stride = round_up(agreement_words, kWordAlignment);
  DeviceBuffer agreement_memory(
      device, static_cast<std::size_t>(world) * agreement_stride * sizeof(std::int64_t));
  auto* const agreement = static_cast<std::int64_t*>(agreement_memory.data());
  for (std::uint32_t r = 0; r < world; ++r) {
    exact_device.agreement_words(arena_of(r), n, agreement + r * agreement_stride);
  }
  launch_combine_words(agreement, world, agreement_stride, agreement_words, IntReduction::kMax,
                       agreement, stream);
  std::vector<std::int64_t> agreed(agreement_words);
  exact_device.download_words(agreed.data(), agreement, agreement_words);
  const ExactPlan plan = plan_exact_blocks(agreed.data(), n, world);

  // The sum round: every rank's digits, summed into rank 0's slot. Poisoned first, so a word
  // no encode wrote shows up as a wrong sum rather than a stale zero.
  const std::size_t digit_stride = round_up(plan.words, kWordAlignment);
  DeviceBuffer digit_memory(device,
                            static_cast<std::size_t>(world) * digit_stride * sizeof(std::int64_t));
  digit_memory.fill_bytes(0x5A);
  auto* const digits = static_cast<std::int64_t*>(digit_memory.data());
  for (std::uint32_t r = 0; r < world; ++r) {
    exact_device.encode(arena_of(r), plan, digits + r * digit_stride);
  }
  launch_combine_words(digits, world, digit_stride, plan.words, IntReduction::kSum, digits, stream);

  // Every rank rounds the same summed words into its own arena, as every live rank does.
  for (std::uint32_t r = 0; r < world; ++r) exact_device.round(digits, plan, op, arena_of(r));
  exact_device.synchronize();
  for (std::uint32_t r = 0; r < world; ++r) {
    arena_memory.download(reduced_arenas[r].data(), n * sizeof(float), r * pitch * sizeof(float));
  }
  return reduced_arenas;
}

}  // namespace rv
