// How the host's vectorised loops are compiled twice (core/exact/host_exact.cc,
// core/exact/stacked_in_double.cc): one C++ loop body, always inlined into a function for the
// build's baseline (SSE2 on x86-64) and, on x86, into one with the AVX2 target attribute
// (8 int32 or 4 double lanes, and the unsigned 32-bit min/max SSE2 lacks); the caller picks
// one with detail::host_isa_available (host_exact.h). No intrinsics. Private to core/exact.
#pragma once

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define RV_HOST_EXACT_AVX2 1
#define RV_TARGET_AVX2 __attribute__((target("avx2")))
#endif
#if defined(__GNUC__) || defined(__clang__)
#define RV_LOOP_BODY inline __attribute__((always_inline))
#else
#define RV_LOOP_BODY inline
#endif
