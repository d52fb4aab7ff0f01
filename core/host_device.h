// RV_HD marks the few element-level laws (NaN canonicalisation, the mean scale, the arena
// value law) that the CPU and the CUDA code must share to the bit: one definition, compiled
// by both compilers.
#pragma once

#if defined(__CUDACC__)
#define RV_HD __host__ __device__ __forceinline__
#else
#define RV_HD inline
#endif
