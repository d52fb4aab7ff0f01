// The exact contract's element work on the CPU (docs/DESIGN.md §2): agreement words, digits
// and rounding over host arrays, with the laws of exact_law.h. The CUDA kernels compute the
// same laws on a GPU (core/cuda/exact/exact_kernel.h, the exact_*_kernel.cu files).
//
// These are the fast paths: branch-free loops the compiler vectorises, each argued (in
// host_exact.cc) and tested to give exactly the bits of the laws applied one element at a
// time (host_exact_law.h). The encode and the round use binary64 arithmetic where it is exact
// or provably rounds as the law does; that needs the IEEE default state (nearest-even, no
// FTZ, no DAZ), so they probe it on every call and run the law-only paths without it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/contract.h"
#include "core/dtype.h"
#include "core/exact/exact_plan.h"

namespace rv {

// The agreement words of n values: exact::kAgreementWords per block, for exact_block_count(n)
// blocks, to be max-reduced over the ranks.
void exact_agreement_words(const float* values, std::size_t n, std::int64_t* words);

// into[i] = max(into[i], other[i]): what the library's max all-reduce does, for emulation.
void merge_agreement_words(std::int64_t* into, const std::int64_t* other, std::size_t words);

// The plan.words int64 digits (and special words) of plan.count values.
void exact_encode(const float* values, const ExactPlan& plan, std::int64_t* words);

// The results from the summed words: plan.count floats, each the value of `dtype` nearest
// the exact sum (or mean) as its binary32 widening (docs/DESIGN.md §2.5; bf16 and f16 take
// the law's own path, element by element).
void exact_round(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out,
                 DType dtype = DType::kF32);

namespace detail {
// Whether this thread's floating-point state is IEEE's default (round-to-nearest-even,
// subnormal results kept, subnormal inputs read as they are), probed.
bool host_fp_state_is_ieee();

// The instruction sets the fast loops are compiled for: the build's baseline (SSE2 on
// x86-64), and AVX2 on x86. The functions above use the fastest one the CPU has; these take
// it as an argument (so the tests hold each to the law). An unavailable one is an InputError.
enum class HostIsa : std::uint8_t { kBaseline, kAvx2 };
bool host_isa_available(HostIsa isa);
void exact_agreement_words(const float* values, std::size_t n, std::int64_t* words, HostIsa isa);
void exact_encode(const float* values, const ExactPlan& plan, std::int64_t* words, HostIsa isa);
void exact_round(const std::int64_t* sums, const ExactPlan& plan, Op op, float* out, HostIsa isa);
}  // namespace detail

}  // namespace rv
