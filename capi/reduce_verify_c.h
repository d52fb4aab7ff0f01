/* The C ABI of reduce-verify (libreduce_verify_c.so): plain C functions over the core, for
 * callers that cannot link C++ — the Python package (python/reduce_verify, through ctypes),
 * and any trainer whose framework has a C FFI. Nothing here names a C++ or a torch type, so
 * one build of the library serves every version of a framework.
 *
 * Contracts (docs/DESIGN.md §2): rv_fold_stacked is the fixed-order fold, rv_exact_reduce_*
 * the exact contract; both read W slots of one stacked table (slot r = rank r's addends, at
 * stacked + r × slot_stride) and write n results. The digest is docs/DESIGN.md §3's:
 * XXH3-128 (seed 0) of the values' little-endian bytes in canonical hex, what
 * `reduce-verify digest` and `xxh128sum` print.
 *
 * Errors: every function returns an rv_status; on anything but RV_OK, rv_last_error() holds
 * a message naming the cause, for the calling thread, until its next call into this library.
 * No function throws, aborts or prints. */
#ifndef REDUCE_VERIFY_C_H_
#define REDUCE_VERIFY_C_H_

#include <stddef.h>
#include <stdint.h>

#if defined(RV_C_BUILDING)
#define RV_C_API __attribute__((visibility("default")))
#else
#define RV_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a function's signature or meaning changes; the Python package refuses a
 * library whose version differs from its own. */
#define RV_C_API_VERSION 2

typedef enum rv_status {
  RV_OK = 0,
  RV_INPUT_ERROR = 1,     /* bad arguments: a null pointer, a stride shorter than n, … */
  RV_RUNTIME_FAILURE = 2, /* the FP state of the calling thread, a CUDA error, memory */
  RV_INTERNAL_ERROR = 3,  /* a bug in reduce-verify, said so */
  RV_UNSUPPORTED = 4      /* a CUDA function of a library built without CUDA */
} rv_status;

typedef enum rv_op { RV_OP_SUM = 0, RV_OP_MEAN = 1 } rv_op;

/* The message of the calling thread's last failure ("" after a success). Valid until the
 * thread's next call into this library. */
RV_C_API const char* rv_last_error(void);

RV_C_API int rv_api_version(void);
/* 1 when the CUDA functions below are built in. */
RV_C_API int rv_built_with_cuda(void);
/* "reduce-verify 0.1.0 (commit …), C API 1, CUDA yes|no, xxHash 0.8.1": for reports. */
RV_C_API const char* rv_library_info(void);

/* The fixed-order fold on the host: out[i] = ((s_0[i] + s_1[i]) + …) + s_{W-1}[i] (op sum),
 * × (1.0f / W) for op mean, NaN written as 0x7FC00000. 1 ≤ world; slot_stride ≥ n; out may
 * be slot 0 itself (in place) and must overlap no other slot. The calling thread's FP state
 * must be IEEE (no FTZ/DAZ, round to nearest even): RV_RUNTIME_FAILURE otherwise. */
RV_C_API rv_status rv_fold_stacked(const float* stacked, uint32_t world, size_t slot_stride,
                                   size_t n, int op, float* out);

/* The exact contract on the host: each out[i] the correctly rounded sum (or mean: the exact
 * sum divided by W, rounded once) of the W addends. 1 ≤ world ≤ 2^20; layout and aliasing as
 * rv_fold_stacked. */
RV_C_API rv_status rv_exact_reduce_stacked(const float* stacked, uint32_t world, size_t slot_stride,
                                           size_t n, int op, float* out);

/* The digest of `count` host floats: 32 lowercase hex digits and a NUL in hex_out[33]. */
RV_C_API rv_status rv_digest_floats(const float* values, size_t count, char* hex_out);

/* The same on a GPU: every pointer a device pointer of `device`, enqueued on `cuda_stream`
 * (a cudaStream_t of that device; NULL for its default stream); the call returns once the
 * work is enqueued. The bits equal the host functions' on every input. The calling thread's
 * current device is restored before returning. */
RV_C_API rv_status rv_cuda_fold_stacked(int device, const float* d_stacked, uint32_t world,
                                        size_t slot_stride, size_t n, int op, float* d_out,
                                        void* cuda_stream);

/* The exact contract on a GPU: one kernel on `cuda_stream` finds each element's window, sums
 * every element's digits and rounds, with no host synchronisation and no scratch memory; the
 * call returns once it is enqueued. Layout and aliasing as rv_exact_reduce_stacked. */
RV_C_API rv_status rv_cuda_exact_reduce_stacked(int device, const float* d_stacked, uint32_t world,
                                                size_t slot_stride, size_t n, int op, float* d_out,
                                                void* cuda_stream);

/* The digest tree's leaves (docs/DESIGN.md §12) of `size` bytes at d_bytes (device memory,
   4-byte aligned, size a multiple of 4), enqueued on cuda_stream: ceil(size / 4096) canonical
   16-byte XXH3-128 digests written to d_leaves (device memory). The caller finishes the root:
   XXH3-128 of size as u64 little-endian followed by the leaves. Not versioned by
   RV_C_API_VERSION: a caller looks the symbol up and falls back to the host reference. */
RV_C_API rv_status rv_cuda_digest_tree_leaves(int device, const void* d_bytes, size_t size,
                                              void* d_leaves, void* cuda_stream);

#ifdef __cplusplus
}
#endif

#endif /* REDUCE_VERIFY_C_H_ */
