// The native bf16/f16 stacked kernels (core/cuda/half_stacked_kernel.h) bit for bit against
// the CPU's rules on the widened values (docs/DESIGN.md §2.5):
//   fold:  core/fold.h's fold_stacked (ascending, binary32, from slot 0), then the one
//          narrowing of core/dtype_law.h;
//   exact: core/exact/exact_reduction.h's exact_reduce_stacked(…, dtype), narrowed (exact).
// W from 1 to 8 (and larger worlds for the exact kernel), lengths around the unit and the
// edges, every phase 0…7 elements of the table, of the output and of the stride (so the
// vector, realigned and scalar paths are all taken), odd byte addresses (bytewise), in place
// into slot 0, both ops, on data of every distribution with NaNs of many payloads, ±Inf, ±0,
// subnormals and values near overflow. Outputs are poisoned and guarded by poison on both
// sides, and the gaps between slots hold poison, so an element missed, written twice or out
// of range, or read from outside its slot, shows up.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/contract.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/half_stacked_kernel.h"
#include "core/dtype.h"
#include "core/dtype_law.h"
#include "core/error.h"
#include "core/exact/exact_reduction.h"
#include "core/fold.h"
#include "tests/gpu/gpu_test_support.h"

namespace rv {
namespace {

using Halves = std::vector<std::uint16_t>;
using detail::HalfPath;

constexpr std::uint16_t kPoison = 0xFFFFu;  // a NaN neither kernel writes (canonical NaNs only)
constexpr std::size_t kGuardBytes = 64;     // a whole number of 16-byte units: phases survive

constexpr DType kHalfDTypes[] = {DType::kBF16, DType::kF16};
constexpr Op kOps[] = {Op::kSum, Op::kMean};

enum class Kernel { kFold, kExact };
const char* name_of(Kernel k) { return k == Kernel::kFold ? "fold" : "exact"; }

// Special bit patterns of each format: ±0, ±Inf, quiet and signalling NaNs of several
// payloads, the smallest and largest subnormals, the smallest normal, the largest finite and
// its neighbour below, ±1, a value just below 2 and one at a midpoint's neighbour.
Halves special_bits(DType dtype) {
  if (dtype == DType::kBF16) {
    return {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFFFF,
            0x7FA5, 0x0001, 0x8001, 0x007F, 0x0080, 0x8080, 0x7F7F, 0xFF7F,
            0x7F7E, 0x3F80, 0xBF80, 0x3FFF, 0x3F81, 0x4000, 0xC000, 0x0100};
  }
  return {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0xFFFF,
          0x7D55, 0x0001, 0x8001, 0x03FF, 0x0400, 0x8400, 0x7BFF, 0xFBFF,
          0x7BFE, 0x3C00, 0xBC00, 0x3FFF, 0x3C01, 0x4000, 0xC000, 0x0200};
}

// Slot r's n elements: seeded arenas of the dtype (core/arena_law_half.h), the special
// distribution in every other slot and the order-sensitive ones between, each slot from its
// own rank's stream; a cancelling pattern in every 5th element; every 17th element replaced
// by one of special_bits.
std::vector<Halves> mixed_slots(DType dtype, std::uint32_t world, std::size_t n,
                                std::uint64_t seed) {
  constexpr Distribution kBetween[] = {Distribution::kCancel, Distribution::kWide,
                                       Distribution::kNormal, Distribution::kExact};
  const Halves specials = special_bits(dtype);
  std::vector<Halves> slots;
  for (std::uint32_t r = 0; r < world; ++r) {
    const Distribution dist = r % 2 == 0 ? Distribution::kSpecial : kBetween[(r / 2) % 4];
    const std::vector<float> values =
        generate_arena(ArenaSpec{kLatestGenerator, dist, seed, dtype}, r, n);
    Halves h(n);
    for (std::size_t i = 0; i < n; ++i) h[i] = half_bits(dtype, values[i]);
    // Every 5th element cancels: +2^14 in slot 0, −2^14 in slot 1, 2^-12 in the others, so
    // binary32 keeps the small addends only when the large ones are added first. Half values
    // span few binades, and without these almost every binary32 fold of them is exact: a fold
    // in another order would go unseen.
    for (std::size_t i = 2; i < n; i += 5) {
      h[i] = half_bits(dtype, r == 0 ? 0x1p14f : r == 1 ? -0x1p14f : 0x1p-12f);
    }
    for (std::size_t i = r; i < n; i += 17) h[i] = specials[(i / 17 + r) % specials.size()];
    slots.push_back(std::move(h));
  }
  return slots;
}

// The CPU's result of `kernel` over the slots, as the dtype's bits.
Halves expected_of(Kernel kernel, const std::vector<Halves>& slots, Op op, DType dtype) {
  const auto world = static_cast<std::uint32_t>(slots.size());
  const std::size_t n = slots[0].size();
  std::vector<float> widened(world * n), out(n);
  for (std::uint32_t r = 0; r < world; ++r) {
    for (std::size_t i = 0; i < n; ++i) widened[r * n + i] = widen_half(dtype, slots[r][i]);
  }
  if (kernel == Kernel::kFold) {
    fold_stacked(widened.data(), world, n, n, op, out.data());
  } else {
    exact_reduce_stacked(widened.data(), world, n, n, op, out.data(), dtype);
  }
  Halves bits(n);
  for (std::size_t i = 0; i < n; ++i) bits[i] = half_bits(dtype, out[i]);  // rounds the fold once
  return bits;
}

::testing::AssertionResult same_halves(const Halves& expected, const Halves& actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure()
           << "sizes differ: " << expected.size() << " vs " << actual.size();
  }
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] != actual[i] && differing++ == 0) first = i;
  }
  if (differing == 0) return ::testing::AssertionSuccess();
  std::ostringstream out;
  out << differing << " of " << expected.size() << " elements differ; first at " << first
      << ": expected 0x" << std::hex << expected[first] << ", got 0x" << actual[first];
  return ::testing::AssertionFailure() << out.str();
}

// Where a table and its output sit: byte offsets past a 16-byte boundary (even: element
// phases; odd: the bytewise path) and the stride's elements beyond n.
struct Layout {
  std::size_t table_offset = 0;
  std::size_t stride_extra = 0;
  std::size_t out_offset = 0;
  bool in_place = false;
};

std::string describe(DType dtype, Kernel kernel, std::uint32_t world, std::size_t n, Op op,
                     const Layout& l) {
  std::ostringstream s;
  s << to_string(dtype) << " " << name_of(kernel) << " W=" << world << " n=" << n << " "
    << to_string(op) << " table+" << l.table_offset << "B stride+" << l.stride_extra << " out+"
    << l.out_offset << "B" << (l.in_place ? " in place" : "");
  return s.str();
}

// Which of a kernel's shapes to launch: its default (neither set), or the one named.
struct ShapeChoice {
  std::optional<detail::HalfFoldShape> fold;
  std::optional<detail::HalfExactShape> exact;
};

std::string describe(const ShapeChoice& shape) {
  if (shape.fold) return std::string("fold shape ") + detail::to_string(*shape.fold);
  if (shape.exact) return std::string("exact shape ") + detail::to_string(*shape.exact);
  return "default shape";
}

// Every shape of `kernel` (detail::kAllHalfFoldShapes or kAllHalfExactShapes).
std::vector<ShapeChoice> every_shape(Kernel kernel) {
  std::vector<ShapeChoice> shapes;
  if (kernel == Kernel::kFold) {
    for (const detail::HalfFoldShape shape : detail::kAllHalfFoldShapes) {
      shapes.push_back(ShapeChoice{shape, std::nullopt});
    }
  } else {
    for (const detail::HalfExactShape shape : detail::kAllHalfExactShapes) {
      shapes.push_back(ShapeChoice{std::nullopt, shape});
    }
  }
  return shapes;
}

// Runs `kernel` over the slots on the device at `layout`; returns the output's n elements
// after checking every guard, gap and (in place) every other slot kept its bytes.
Halves run_on_device(Kernel kernel, const std::vector<Halves>& slots, Op op, DType dtype,
                     const Layout& layout, HalfPath* path = nullptr,
                     const ShapeChoice& shape = ShapeChoice{}) {
  const auto world = static_cast<std::uint32_t>(slots.size());
  const std::size_t n = slots[0].size();
  const std::size_t stride = n + layout.stride_extra;
  const std::size_t table_elements = (world - 1) * stride + n;
  // The table's host image: guards, slots, poison gaps, guards (bytes, for odd offsets).
  std::vector<unsigned char> image(
      kGuardBytes + layout.table_offset + 2 * table_elements + kGuardBytes, 0xFF);
  unsigned char* table = image.data() + kGuardBytes + layout.table_offset;
  for (std::uint32_t r = 0; r < world; ++r) {
    std::memcpy(table + 2 * r * stride, slots[r].data(), 2 * n);
  }
  DeviceBuffer d_table(0, image.size());
  d_table.upload(image.data(), image.size());
  const std::size_t out_bytes = kGuardBytes + layout.out_offset + 2 * n + kGuardBytes;
  DeviceBuffer d_out(0, out_bytes);
  d_out.fill_bytes(0xFF);
  const auto* d_stacked =
      static_cast<unsigned char*>(d_table.data()) + kGuardBytes + layout.table_offset;
  unsigned char* d_result =
      layout.in_place ? const_cast<unsigned char*>(d_stacked)
                      : static_cast<unsigned char*>(d_out.data()) + kGuardBytes + layout.out_offset;
  if (path != nullptr) *path = detail::half_path(d_stacked, world, stride, n, d_result);
  if (kernel == Kernel::kFold) {
    if (shape.fold) {
      detail::cuda_fold_stacked_half_shaped(d_stacked, world, stride, n, op, dtype, d_result,
                                            nullptr, *shape.fold);
    } else {
      cuda_fold_stacked_half(d_stacked, world, stride, n, op, dtype, d_result, nullptr);
    }
  } else {
    if (shape.exact) {
      detail::cuda_exact_stacked_half_shaped(d_stacked, world, stride, n, op, dtype, d_result,
                                             nullptr, *shape.exact);
    } else {
      cuda_exact_stacked_half(d_stacked, world, stride, n, op, dtype, d_result, nullptr);
    }
  }
  std::vector<unsigned char> after(image.size());
  d_table.download(after.data(), after.size());  // waits for the kernel
  Halves result(n);
  if (layout.in_place) {
    std::memcpy(result.data(), after.data() + kGuardBytes + layout.table_offset, 2 * n);
    // Everything but slot 0 must be untouched.
    std::memcpy(after.data() + kGuardBytes + layout.table_offset, slots[0].data(), 2 * n);
    EXPECT_TRUE(after == image) << "the table changed outside slot 0";
  } else {
    EXPECT_TRUE(after == image) << "the table changed";
    std::vector<unsigned char> out(out_bytes);
    d_out.download(out.data(), out.size());
    const std::size_t begin = kGuardBytes + layout.out_offset;
    std::memcpy(result.data(), out.data() + begin, 2 * n);
    bool guards = true;
    for (std::size_t b = 0; b < out.size(); ++b) {
      if ((b < begin || b >= begin + 2 * n) && out[b] != 0xFF) guards = false;
    }
    EXPECT_TRUE(guards) << "a byte outside the output was written";
  }
  return result;
}

void expect_equal(Kernel kernel, DType dtype, const std::vector<Halves>& slots, Op op,
                  const Layout& layout, const Halves& expected,
                  const ShapeChoice& shape = ShapeChoice{}) {
  const auto world = static_cast<std::uint32_t>(slots.size());
  SCOPED_TRACE(describe(shape) + " " + describe(dtype, kernel, world, slots[0].size(), op, layout));
  EXPECT_TRUE(
      same_halves(expected, run_on_device(kernel, slots, op, dtype, layout, nullptr, shape)));
}

// The same for every shape of the kernel (the host's result computed once).
void expect_every_shape_equal(Kernel kernel, DType dtype, const std::vector<Halves>& slots, Op op,
                              const std::vector<Layout>& layouts) {
  const Halves expected = expected_of(kernel, slots, op, dtype);
  for (const ShapeChoice& shape : every_shape(kernel)) {
    for (const Layout& layout : layouts) {
      expect_equal(kernel, dtype, slots, op, layout, expected, shape);
    }
  }
}

void expect_equal(Kernel kernel, DType dtype, const std::vector<Halves>& slots, Op op,
                  const Layout& layout) {
  expect_equal(kernel, dtype, slots, op, layout, expected_of(kernel, slots, op, dtype));
}

class HalfStacked : public ::testing::TestWithParam<Kernel> {
 protected:
  void SetUp() override { RV_SKIP_WITHOUT_GPU(); }
};

TEST_P(HalfStacked, EqualsCpuAtEveryWorldLengthAndPhase) {
  constexpr std::size_t kLengths[] = {0, 1, 7, 15, 16, 17, 31, 32, 33, 47, 100, 1000, 4099};
  for (const DType dtype : kHalfDTypes) {
    for (std::uint32_t world = 1; world <= 8; ++world) {
      for (const std::size_t n : kLengths) {
        const auto slots = mixed_slots(dtype, world, n, 1000 * world + n);
        for (const Op op : kOps) {
          const Halves expected = expected_of(GetParam(), slots, op, dtype);
          const auto check = [&](const Layout& layout) {
            expect_equal(GetParam(), dtype, slots, op, layout, expected);
          };
          if (n == 0) {  // nothing to compare; the call must still be accepted
            check(Layout{});
            continue;
          }
          for (std::size_t phase = 0; phase < 8; ++phase) {
            const std::size_t outs[] = {phase, (phase + 3) % 8, 0};
            for (const std::size_t out_phase : outs) {
              for (const std::size_t extra : {std::size_t{0}, (phase + 1) % 8}) {
                check(Layout{2 * phase, extra, 2 * out_phase});
              }
            }
          }
          check(Layout{0, 0, 0, true});
          check(Layout{6, 3, 0, true});
          check(Layout{1, 0, 3});  // odd bytes: bytewise
          check(Layout{0, 5, 7});
        }
      }
    }
  }
}

TEST_P(HalfStacked, EveryPathIsTaken) {
  const auto slots = mixed_slots(DType::kBF16, 3, 1000, 5);
  HalfPath path{};
  run_on_device(GetParam(), slots, Op::kSum, DType::kBF16, Layout{0, 0, 0}, &path);
  EXPECT_EQ(path, HalfPath::kVector);
  run_on_device(GetParam(), slots, Op::kSum, DType::kBF16, Layout{2, 0, 0}, &path);
  EXPECT_EQ(path, HalfPath::kRealigned);
  run_on_device(GetParam(), slots, Op::kSum, DType::kBF16, Layout{0, 1, 0}, &path);
  EXPECT_EQ(path, HalfPath::kRealigned);
  run_on_device(GetParam(), slots, Op::kSum, DType::kBF16, Layout{1, 0, 0}, &path);
  EXPECT_EQ(path, HalfPath::kScalar);
}

TEST_P(HalfStacked, LongShardsTakeSeveralGridStrides) {
  for (const DType dtype : kHalfDTypes) {
    for (const std::uint32_t world : {2u, 3u, 8u}) {
      const std::size_t n = (std::size_t{1} << 21) + 13;
      const auto slots = mixed_slots(dtype, world, n, 77 + world);
      for (const Op op : kOps) {
        expect_equal(GetParam(), dtype, slots, op, Layout{0, 0, 0});
        expect_equal(GetParam(), dtype, slots, op, Layout{4, 5, 10});
      }
    }
  }
}

// Every pair of special values at W = 2 (and each with a third value at W = 3), so each
// special rule (NaN of any payload, Inf − Inf, −0 + −0, overflow, subnormal sums) is met in
// every position.
TEST_P(HalfStacked, EverySpecialPairEqualsCpu) {
  for (const DType dtype : kHalfDTypes) {
    const Halves specials = special_bits(dtype);
    std::vector<Halves> pair(2), triple(3);
    for (const std::uint16_t a : specials) {
      for (const std::uint16_t b : specials) {
        pair[0].push_back(a);
        pair[1].push_back(b);
        for (const std::uint16_t c : {specials[3], specials[16], specials[1]}) {
          triple[0].push_back(a);
          triple[1].push_back(b);
          triple[2].push_back(c);
        }
      }
    }
    for (const Op op : kOps) {
      expect_equal(GetParam(), dtype, pair, op, Layout{});
      expect_equal(GetParam(), dtype, pair, op, Layout{2, 1, 6});
      expect_equal(GetParam(), dtype, triple, op, Layout{});
      expect_equal(GetParam(), dtype, triple, op, Layout{14, 3, 2});
    }
  }
}

TEST_P(HalfStacked, RejectsBadArguments) {
  const DeviceBuffer d(0, 4096);
  auto* p = static_cast<unsigned char*>(d.data());
  const auto call = [&](const void* in, std::uint32_t world, std::size_t stride, std::size_t n,
                        void* out) {
    if (GetParam() == Kernel::kFold) {
      cuda_fold_stacked_half(in, world, stride, n, Op::kSum, DType::kF16, out, nullptr);
    } else {
      cuda_exact_stacked_half(in, world, stride, n, Op::kSum, DType::kF16, out, nullptr);
    }
  };
  EXPECT_THROW(call(p, 0, 10, 10, p + 1024), InputError);             // no slots
  EXPECT_THROW(call(p, 2, 5, 10, p + 1024), InputError);              // stride < n
  EXPECT_THROW(call(nullptr, 2, 10, 10, p + 1024), InputError);       // null table
  EXPECT_THROW(call(p, 2, 10, 10, nullptr), InputError);              // null output
  EXPECT_THROW(call(p, 2, 10, 10, p + 20), InputError);               // onto slot 1
  EXPECT_THROW(call(p, 2, 10, 10, p + 2), InputError);                // slot 0, shifted
  EXPECT_THROW(call(p, (1u << 20) + 1, 0, 0, p + 1024), InputError);  // world too large
  EXPECT_NO_THROW(call(p, 2, 10, 10, p));                             // in place
  EXPECT_NO_THROW(call(p, 2, 10, 0, nullptr));                        // nothing to do
}

// The comparisons above could fail: on this data the CPU's results move when the slots are
// taken in another order (the fold) or one addend is dropped (both), so a kernel that read a
// slot out of order, or missed one, would differ. Runs on the host alone.
TEST(HalfStackedData, ResultsMoveWithOrderAndWithADroppedSlot) {
  for (const DType dtype : kHalfDTypes) {
    const auto slots = mixed_slots(dtype, 4, 4099, 3);
    const std::vector<Halves> reversed(slots.rbegin(), slots.rend());
    const std::vector<Halves> three(slots.begin(), slots.end() - 1);
    EXPECT_FALSE(same_halves(expected_of(Kernel::kFold, slots, Op::kSum, dtype),
                             expected_of(Kernel::kFold, reversed, Op::kSum, dtype)));
    for (const Kernel kernel : {Kernel::kFold, Kernel::kExact}) {
      EXPECT_FALSE(same_halves(expected_of(kernel, slots, Op::kSum, dtype),
                               expected_of(kernel, three, Op::kSum, dtype)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, HalfStacked, ::testing::Values(Kernel::kFold, Kernel::kExact),
                         [](const ::testing::TestParamInfo<Kernel>& param) {
                           return std::string(name_of(param.param));
                         });

// The exact kernel beyond W = 8, and on data whose windows outgrow a double (the rare path):
// bf16 values across binary32's whole exponent range; and sums that land on or beside the
// dtype's rounding boundaries, whose means must not be rounded twice.
class HalfExact : public ::testing::Test {
 protected:
  void SetUp() override { RV_SKIP_WITHOUT_GPU(); }
};

TEST_F(HalfExact, EqualsHostAtLargerWorlds) {
  for (const DType dtype : kHalfDTypes) {
    for (const std::uint32_t world : {9u, 16u, 31u, 100u, 1024u, 8192u, 9000u}) {
      const std::size_t n = world >= 1024 ? 257 : 4099;
      const auto slots = mixed_slots(dtype, world, n, world);
      for (const Op op : kOps) {
        expect_equal(Kernel::kExact, dtype, slots, op, Layout{});
        expect_equal(Kernel::kExact, dtype, slots, op, Layout{2, 3, 4});
      }
    }
  }
}

TEST_F(HalfExact, EqualsHostOnWideWindowsAndBoundaries) {
  std::mt19937_64 random(19);
  for (const DType dtype : kHalfDTypes) {
    const Halves specials = special_bits(dtype);
    for (const std::uint32_t world : {2u, 3u, 5u, 6u, 7u, 64u}) {
      const std::size_t n = 8191;
      std::vector<Halves> slots(world, Halves(n));
      for (std::size_t i = 0; i < n; ++i) {
        const int kind = static_cast<int>(i % 4);
        for (std::uint32_t r = 0; r < world; ++r) {
          std::uint16_t h;
          const auto bits = static_cast<std::uint16_t>(random());
          if (kind == 0) {
            h = bits;  // any pattern: every exponent, NaNs included
          } else if (kind == 1) {
            // A huge value and tiny ones: the window spans the format's whole range.
            h = r == 0
                    ? static_cast<std::uint16_t>(bits | (dtype == DType::kBF16 ? 0x7000 : 0x7000))
                    : static_cast<std::uint16_t>(bits & 0x80FF);
            if ((h & 0x7FFF) >= (dtype == DType::kBF16 ? 0x7F80 : 0x7C00)) h &= 0xBFFF;
          } else if (kind == 2) {
            // Small integers: sums and means that are exact midpoints of the dtype.
            h = half_bits(dtype, static_cast<float>(static_cast<int>(bits % 2049) - 1024));
          } else {
            h = specials[(bits >> 3) % specials.size()];
          }
          slots[r][i] = h;
        }
      }
      for (const Op op : kOps) {
        expect_equal(Kernel::kExact, dtype, slots, op, Layout{});
        expect_equal(Kernel::kExact, dtype, slots, op, Layout{10, 1, 0});
      }
    }
  }
}

// Every shape of the exact kernel (detail::HalfExactShape) gives the host's bits, on the paths
// and edges where a thread's second unit may be missing, and on slots long enough for many
// grid strides (and, staged, many groups a warp).
TEST_F(HalfExact, EveryShapeEqualsHost) {
  const std::vector<Layout> layouts = {Layout{}, Layout{2, 1, 6}, Layout{0, 3, 0},
                                       Layout{4, 0, 0, true}};
  for (const DType dtype : kHalfDTypes) {
    for (std::uint32_t world = 1; world <= 8; ++world) {
      for (const std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{1000},
                                  std::size_t{4099}, (std::size_t{1} << 20) + 5}) {
        const auto slots = mixed_slots(dtype, world, n, 3 * world + n);
        for (const Op op : kOps)
          expect_every_shape_equal(Kernel::kExact, dtype, slots, op, layouts);
      }
    }
  }
}

class HalfFold : public ::testing::Test {
 protected:
  void SetUp() override { RV_SKIP_WITHOUT_GPU(); }
};

// The same for the fold's shapes (detail::HalfFoldShape).
TEST_F(HalfFold, EveryShapeEqualsHost) {
  const std::vector<Layout> layouts = {Layout{}, Layout{2, 1, 6}, Layout{0, 3, 0},
                                       Layout{4, 0, 0, true}};
  for (const DType dtype : kHalfDTypes) {
    for (std::uint32_t world = 1; world <= 8; ++world) {
      for (const std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{1000},
                                  std::size_t{4099}, (std::size_t{1} << 20) + 5}) {
        const auto slots = mixed_slots(dtype, world, n, 5 * world + n);
        for (const Op op : kOps) expect_every_shape_equal(Kernel::kFold, dtype, slots, op, layouts);
      }
    }
  }
}

// Every shape of both kernels at every phase of the table, the output and the stride (each
// realignment of a slot: the shapes' realign has one branch per phase), in place, bytewise,
// and below the unit paths' minimum lengths.
TEST_P(HalfStacked, EveryShapeAtEveryPhase) {
  for (const DType dtype : kHalfDTypes) {
    for (const std::uint32_t world : {1u, 2u, 3u, 5u, 8u}) {
      for (const std::size_t n :
           {std::size_t{15}, std::size_t{33}, std::size_t{100}, std::size_t{4099}}) {
        const auto slots = mixed_slots(dtype, world, n, 7000 * world + n);
        std::vector<Layout> layouts = {Layout{0, 0, 0, true}, Layout{6, 3, 0, true},
                                       Layout{1, 0, 3}, Layout{0, 5, 7}};
        for (std::size_t phase = 0; phase < 8; ++phase) {
          layouts.push_back(Layout{2 * phase, 0, 2 * phase});
          layouts.push_back(Layout{2 * phase, (phase + 1) % 8, 2 * ((phase + 3) % 8)});
          layouts.push_back(Layout{0, phase, 2 * phase});
        }
        for (const Op op : kOps) expect_every_shape_equal(GetParam(), dtype, slots, op, layouts);
      }
    }
  }
}

// Every shape beyond W = 8 (several rounds of a unit; f16 above 2^13 takes the first kernel's
// one-unit shape), on the specials' pairs and triples, and (exact) on windows wider than a
// double and sums on the dtype's rounding boundaries: the rules each shape must keep.
TEST_P(HalfStacked, EveryShapeAtLargerWorldsAndOnSpecials) {
  for (const DType dtype : kHalfDTypes) {
    for (const std::uint32_t world : {9u, 16u, 31u, 100u}) {
      const auto slots = mixed_slots(dtype, world, 4099, 11 * world);
      for (const Op op : kOps) {
        expect_every_shape_equal(GetParam(), dtype, slots, op, {Layout{}, Layout{2, 3, 4}});
      }
    }
    if (GetParam() == Kernel::kExact) {
      for (const std::uint32_t world : {1024u, 8192u, 8193u}) {
        const auto slots = mixed_slots(dtype, world, 257, world);
        expect_every_shape_equal(GetParam(), dtype, slots, Op::kMean, {Layout{}, Layout{2, 3, 4}});
      }
    }
    const Halves specials = special_bits(dtype);
    std::vector<Halves> pair(2), triple(3);
    for (const std::uint16_t a : specials) {
      for (const std::uint16_t b : specials) {
        pair[0].push_back(a);
        pair[1].push_back(b);
        for (const std::uint16_t c : {specials[3], specials[16], specials[1]}) {
          triple[0].push_back(a);
          triple[1].push_back(b);
          triple[2].push_back(c);
        }
      }
    }
    for (const Op op : kOps) {
      expect_every_shape_equal(GetParam(), dtype, pair, op, {Layout{}, Layout{2, 1, 6}});
      expect_every_shape_equal(GetParam(), dtype, triple, op, {Layout{}, Layout{14, 3, 2}});
    }
  }
}

// Every exact shape on windows wider than a double, the specials' patterns and sums that land
// on or beside the dtype's rounding boundaries (HalfExact.EqualsHostOnWideWindowsAndBoundaries'
// data), where a unit's elements go the law's way.
TEST_F(HalfExact, EveryShapeOnWideWindowsAndBoundaries) {
  std::mt19937_64 random(23);
  for (const DType dtype : kHalfDTypes) {
    const Halves specials = special_bits(dtype);
    for (const std::uint32_t world : {2u, 3u, 4u, 7u, 64u}) {
      const std::size_t n = 8191;
      std::vector<Halves> slots(world, Halves(n));
      for (std::size_t i = 0; i < n; ++i) {
        const int kind = static_cast<int>(i % 4);
        for (std::uint32_t r = 0; r < world; ++r) {
          std::uint16_t h;
          const auto bits = static_cast<std::uint16_t>(random());
          if (kind == 0) {
            h = bits;
          } else if (kind == 1) {
            h = r == 0 ? static_cast<std::uint16_t>(bits | 0x7000)
                       : static_cast<std::uint16_t>(bits & 0x80FF);
            if ((h & 0x7FFF) >= (dtype == DType::kBF16 ? 0x7F80 : 0x7C00)) h &= 0xBFFF;
          } else if (kind == 2) {
            h = half_bits(dtype, static_cast<float>(static_cast<int>(bits % 2049) - 1024));
          } else {
            h = specials[(bits >> 3) % specials.size()];
          }
          slots[r][i] = h;
        }
      }
      for (const Op op : kOps) {
        expect_every_shape_equal(Kernel::kExact, dtype, slots, op, {Layout{}, Layout{10, 1, 0}});
      }
    }
  }
}

// A unit whose elements all settle in the double and one where a single element must take the
// law (a NaN, a −0 sum, a window wider than a double) sit side by side in every 8 elements, at
// every element position of the unit, so a shape that let the law's element spoil its
// neighbours (or skipped it) would differ.
TEST_F(HalfExact, EveryShapeWithOneLawElementPerUnit) {
  for (const DType dtype : kHalfDTypes) {
    const std::uint16_t nan = dtype == DType::kBF16 ? 0x7FA5 : 0x7D55;
    const std::uint16_t tiny = 0x0001;                                   // smallest subnormal
    const std::uint16_t huge = dtype == DType::kBF16 ? 0x7E00 : 0x7800;  // far above it
    for (const std::uint32_t world : {2u, 3u, 5u}) {
      const std::size_t n = 8 * 64 + 3;
      auto slots = mixed_slots(dtype, world, n, 91 + world);
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t which = (i / 8) % 8;  // the law's element's position in its unit
        if (i % 8 != which) continue;
        const int kind = static_cast<int>((i / 64) % 3);
        for (std::uint32_t r = 0; r < world; ++r) {
          slots[r][i] = kind == 0   ? (r == 1 ? nan : slots[r][i])
                        : kind == 1 ? std::uint16_t{0x8000}
                                    : (r == 0 ? huge : tiny);
        }
      }
      for (const Op op : kOps) {
        expect_every_shape_equal(Kernel::kExact, dtype, slots, op,
                                 {Layout{}, Layout{6, 1, 2}, Layout{0, 0, 0, true}});
      }
    }
  }
}

// f32 is passed through to the float kernels (4-byte elements).
TEST_F(HalfExact, F32IsTheFloatKernels) {
  const std::size_t n = 1000;
  const auto arenas = test::arenas_of(Distribution::kWide, 3, n, 4);
  std::vector<float> table;
  for (const auto& a : arenas) table.insert(table.end(), a.begin(), a.end());
  DeviceBuffer d_table(0, table.size() * sizeof(float));
  d_table.upload_floats(table);
  const DeviceBuffer d_out(0, n * sizeof(float));
  std::vector<float> expected(n);
  cuda_exact_stacked_half(d_table.data(), 3, n, n, Op::kMean, DType::kF32, d_out.data(), nullptr);
  exact_reduce_stacked(table.data(), 3, n, n, Op::kMean, expected.data());
  EXPECT_TRUE(test::same_bits(expected, d_out.download_floats(n)));
  cuda_fold_stacked_half(d_table.data(), 3, n, n, Op::kMean, DType::kF32, d_out.data(), nullptr);
  fold_stacked(table.data(), 3, n, n, Op::kMean, expected.data());
  EXPECT_TRUE(test::same_bits(expected, d_out.download_floats(n)));
}

}  // namespace
}  // namespace rv
