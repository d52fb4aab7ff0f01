/* The C ABI of reduce-verify (libreduce_verify_c.so): plain C functions over the core, for
 * callers that cannot link C++ — the Python package (python/reduce_verify, through ctypes),
 * and any trainer whose framework has a C FFI. Nothing here names a C++ or a torch type, so
 * one build of the library serves every version of a framework.
 *
 * Contracts (docs/DESIGN.md §2): rv_fixed_order_reduce_stacked is the fixed-order fold,
 * rv_exact_reduce_* the exact contract; both read W slots of one stacked table (slot r = rank r's
 * addends, at stacked + r × slot_stride) and write n results. The digest is docs/DESIGN.md §3's:
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
#define RV_C_API_VERSION 5 /* 5: rv_accumulator_add_rows; 4: rv_fold_stacked* renamed */

typedef enum rv_status {
  RV_OK = 0,
  RV_INPUT_ERROR = 1,     /* bad arguments: a null pointer, a stride shorter than n, … */
  RV_RUNTIME_FAILURE = 2, /* the FP state of the calling thread, a CUDA error, memory */
  RV_INTERNAL_ERROR = 3,  /* a bug in reduce-verify, said so */
  RV_UNSUPPORTED = 4      /* a CUDA function of a library built without CUDA */
} rv_status;

typedef enum rv_op { RV_OP_SUM = 0, RV_OP_MEAN = 1 } rv_op;

/* The element types (docs/DESIGN.md §2.5): binary32 (4 bytes an element), bfloat16 and IEEE
 * binary16 (2 bytes an element, little-endian, as torch.bfloat16 / torch.float16 store them).
 * The *_dtype functions take and write elements of the dtype itself: a half-precision addend
 * is widened to binary32 (exact), and the result rounded to the dtype once, as the contract
 * says (fixed-order: after the binary32 fold; exact: the exact sum itself, never through
 * binary32). Any other value is RV_INPUT_ERROR naming it. Since C API 3. */
typedef enum rv_dtype { RV_DTYPE_F32 = 0, RV_DTYPE_BF16 = 1, RV_DTYPE_F16 = 2 } rv_dtype;

/* The message of the calling thread's last failure ("" after a success). Valid until the
 * thread's next call into this library. */
RV_C_API const char* rv_last_error(void);

RV_C_API int rv_api_version(void);
/* 1 when the CUDA functions below are built in. */
RV_C_API int rv_built_with_cuda(void);
/* "reduce-verify 0.1.0 (commit …), C API 3, CUDA yes|no, xxHash 0.8.1": for reports. */
RV_C_API const char* rv_library_info(void);

/* The fixed-order fold on the host: out[i] = ((s_0[i] + s_1[i]) + …) + s_{W-1}[i] (op sum),
 * × (1.0f / W) for op mean, NaN written as 0x7FC00000. 1 ≤ world; slot_stride ≥ n; out may
 * be slot 0 itself (in place) and must overlap no other slot. The calling thread's FP state
 * must be IEEE (no FTZ/DAZ, round to nearest even): RV_RUNTIME_FAILURE otherwise. */
RV_C_API rv_status rv_fixed_order_reduce_stacked(const float* stacked, uint32_t world,
                                                 size_t slot_stride, size_t n, int op, float* out);

/* The exact contract on the host: each out[i] the correctly rounded sum (or mean: the exact
 * sum divided by W, rounded once) of the W addends. 1 ≤ world ≤ 2^20; layout and aliasing as
 * rv_fixed_order_reduce_stacked. */
RV_C_API rv_status rv_exact_reduce_stacked(const float* stacked, uint32_t world, size_t slot_stride,
                                           size_t n, int op, float* out);

/* The same over elements of `dtype` (rv_dtype): stacked, out and slot_stride count elements
 * of that dtype (2 bytes for bf16 and f16). RV_DTYPE_F32 is rv_fixed_order_reduce_stacked /
 * rv_exact_reduce_stacked exactly. */
RV_C_API rv_status rv_fixed_order_reduce_stacked_dtype(const void* stacked, uint32_t world,
                                                       size_t slot_stride, size_t n, int op,
                                                       int dtype, void* out);
RV_C_API rv_status rv_exact_reduce_stacked_dtype(const void* stacked, uint32_t world,
                                                 size_t slot_stride, size_t n, int op, int dtype,
                                                 void* out);

/* The reduce-scatter's layout (docs/DESIGN.md §2.6), FSDP's: an arena of n elements over
 * `world` ranks is padded to world × s elements, s = shard_size, or ⌈n / world⌉ when
 * shard_size is 0 (an explicit 0 is valid only for n = 0, where it is the same plan); rank
 * `rank`'s shard is the elements [rank × s, (rank + 1) × s) cut to [0, n), written to *begin
 * and *count (shorter, or empty at n, where it reaches into the padding), and s to
 * *padded_shard_size. A caller with its own all-to-all (torch.distributed) reduce-scatters
 * by sending every rank p its slice [begin_p, begin_p + count_p) into slot r of p's table and
 * reducing that table with rv_fixed_order_reduce_stacked_dtype or rv_exact_reduce_stacked_dtype:
 * every element then has the bits of the all-reduce of the same contract, op and dtype at its
 * index. RV_INPUT_ERROR for world 0, rank ≥ world, a null output pointer, or an s with
 * world × s < n. Added within C API 3: nothing else changed. */
RV_C_API rv_status rv_reduce_scatter_shard(size_t n, uint32_t world, uint32_t rank,
                                           size_t shard_size, size_t* begin, size_t* count,
                                           size_t* padded_shard_size);

/* The digest of `count` host floats: 32 lowercase hex digits and a NUL in hex_out[33]. */
RV_C_API rv_status rv_digest_floats(const float* values, size_t count, char* hex_out);
/* The digest of `count` host elements of `dtype`: XXH3-128 of their own bytes (2 an element
 * for bf16 and f16), what `reduce-verify digest --dtype …` prints for them. */
RV_C_API rv_status rv_digest_values(const void* values, size_t count, int dtype, char* hex_out);

/* The same on a GPU: every pointer a device pointer of `device`, enqueued on `cuda_stream`
 * (a cudaStream_t of that device; NULL for its default stream); the call returns once the
 * work is enqueued. The bits equal the host functions' on every input. The calling thread's
 * current device is restored before returning. */
RV_C_API rv_status rv_cuda_fixed_order_reduce_stacked(int device, const float* d_stacked,
                                                      uint32_t world, size_t slot_stride, size_t n,
                                                      int op, float* d_out, void* cuda_stream);

/* The fixed-order fold of elements of `dtype` on a GPU: one kernel on `cuda_stream` reads the
 * 2-byte values, folds them widened to binary32 and narrows each result once (RV_DTYPE_F32:
 * rv_cuda_fixed_order_reduce_stacked); no scratch memory, and the call returns once it is
 * enqueued. */
RV_C_API rv_status rv_cuda_fixed_order_reduce_stacked_dtype(int device, const void* d_stacked,
                                                            uint32_t world, size_t slot_stride,
                                                            size_t n, int op, int dtype,
                                                            void* d_out, void* cuda_stream);

/* The exact contract on a GPU: one kernel on `cuda_stream` finds each element's window, sums
 * every element's digits and rounds, with no host synchronisation and no scratch memory; the
 * call returns once it is enqueued. Layout and aliasing as rv_exact_reduce_stacked. */
RV_C_API rv_status rv_cuda_exact_reduce_stacked(int device, const float* d_stacked, uint32_t world,
                                                size_t slot_stride, size_t n, int op, float* d_out,
                                                void* cuda_stream);

/* The exact contract over elements of `dtype` on a GPU. RV_DTYPE_F32 is
 * rv_cuda_exact_reduce_stacked. For bf16 and f16 one kernel on `cuda_stream` rounds each exact
 * sum (or mean) straight to the half format (docs/DESIGN.md §2.5), never through binary32; no
 * host synchronisation, and the call returns once it is enqueued. */
RV_C_API rv_status rv_cuda_exact_reduce_stacked_dtype(int device, const void* d_stacked,
                                                      uint32_t world, size_t slot_stride, size_t n,
                                                      int op, int dtype, void* d_out,
                                                      void* cuda_stream);

/* Exact gradient accumulation (docs/DESIGN.md §11): an accumulator of `count` elements takes
 * float32 arrays any number of times into exact per-element sums; the ranks' accumulators
 * combine through two int64 all-reduces the caller runs (a MAX over the agreement words, a SUM
 * over the digit words) on any transport; finish rounds once: each element RN(Σ) (op sum) or
 * RN(Σ / mean_over) (op mean, 1 ≤ mean_over ≤ 2^20), Σ over every addend of every rank,
 * whatever the split, order or grouping. On a device ≥ 0 every value, digit and result
 * pointer is a device pointer of that device, work is enqueued on `cuda_stream` and the calls
 * return when their results are usable on that stream; an add is settled (a 4-byte flag read
 * back, and the blocks the GPU cannot hold in 62 bits taken over by the host) by the next
 * end_micro_batch, agreement_words or overlapping add, so its values must stay valid until
 * then. Device −1 is the host, and cuda_stream is ignored there. */
typedef struct rv_accumulator rv_accumulator;

RV_C_API rv_status rv_accumulator_create(size_t count, int device, rv_accumulator** out);
/* NULL is allowed. */
RV_C_API rv_status rv_accumulator_destroy(rv_accumulator* accumulator);
/* Adds values[0, n) to elements [offset, offset + n); offset a multiple of 1024 (each range
 * starts a block), offset + n ≤ count. */
RV_C_API rv_status rv_accumulator_add(rv_accumulator* accumulator, const float* values,
                                      size_t offset, size_t n, void* cuda_stream);
/* The same for n elements of `dtype` (2 bytes each for bf16 and f16), each widened exactly: the
 * sums are of the same values. On a device the widened copy is kept until the add is settled
 * (values itself may be reused once the call returns). */
RV_C_API rv_status rv_accumulator_add_dtype(rv_accumulator* accumulator, const void* values,
                                            size_t offset, size_t n, int dtype, void* cuda_stream);
/* `rows` rows of n elements of `dtype`, row r at values + r * row_stride elements (row_stride
 * >= n when rows > 1), each added as rv_accumulator_add_dtype would add it: the same sums. On a
 * device the rows are one launch and one settle (the adds one by one each settle the last, a
 * wait each); bf16 and f16 rows are widened into one binary32 table kept until the settle. */
RV_C_API rv_status rv_accumulator_add_rows(rv_accumulator* accumulator, const void* values,
                                           size_t row_stride, size_t rows, size_t offset, size_t n,
                                           int dtype, void* cuda_stream);
/* Counts one micro-batch (the count every rank's digit word 0 carries into the sum). */
RV_C_API rv_status rv_accumulator_end_micro_batch(rv_accumulator* accumulator);
/* The same without waiting for the device: the micro-batch is counted, and the settle of its
 * adds waits for rv_accumulator_resolve (or the next add, agreement_words or clear), which
 * waits only for a flag read back behind those adds, as a rule long done by the time the next
 * micro-batch's forward pass is enqueued. The adds' values must stay valid until then. On
 * the host, end_micro_batch itself; resolve does nothing there. */
RV_C_API rv_status rv_accumulator_end_micro_batch_deferred(rv_accumulator* accumulator);
RV_C_API rv_status rv_accumulator_resolve(rv_accumulator* accumulator);
/* Back to an empty accumulator. */
RV_C_API rv_status rv_accumulator_clear(rv_accumulator* accumulator, void* cuda_stream);
/* Round 1: *words = the agreement words' count; the words (host memory) to MAX-reduce. The
 * header carries the length, `layout` (the caller's fingerprint of what the elements are),
 * op and mean_over, each as x and −x, so that the reduced words show a disagreement. */
RV_C_API rv_status rv_accumulator_agreement_size(const rv_accumulator* accumulator, size_t* words);
RV_C_API rv_status rv_accumulator_agreement_words(rv_accumulator* accumulator, int64_t layout,
                                                  int op, uint64_t mean_over, int64_t* host_words,
                                                  void* cuda_stream);
/* Round 2: the plan from the MAX-reduced words (host memory; RV_INPUT_ERROR naming the field
 * where the ranks disagree), *digit_words = the digit words to SUM-reduce; then the digits
 * (word 0: this rank's micro-batches). */
RV_C_API rv_status rv_accumulator_plan(rv_accumulator* accumulator, const int64_t* host_agreed,
                                       uint32_t world, size_t* digit_words);
RV_C_API rv_status rv_accumulator_export_digits(rv_accumulator* accumulator, int64_t* words,
                                                void* cuda_stream);
/* The results from the SUM-reduced digit words into out[0, count). */
RV_C_API rv_status rv_accumulator_finish(rv_accumulator* accumulator, const int64_t* summed, int op,
                                         uint64_t mean_over, float* out, void* cuda_stream);
/* The same with each result rounded once, directly to `dtype` (never through binary32), and
 * written as that dtype's elements into out[0, count). On a device with bf16 or f16 the summed
 * words are copied to the host and rounded there (the device rounds to binary32 only): the
 * call returns once the results are in d_out. */
RV_C_API rv_status rv_accumulator_finish_dtype(rv_accumulator* accumulator, const int64_t* summed,
                                               int op, uint64_t mean_over, int dtype, void* out,
                                               void* cuda_stream);
/* What it costs: bytes held (device and host), blocks kept wide, blocks with special flags. */
/* A world of one, in place of the three rounds: the results rv_accumulator_finish_dtype would
 * write from the words of a plan of this accumulator's own agreement words (its sums are the
 * world's), with no agreement, plan or digit words. On a device (binary32) the rounding reads
 * the digits in place, and is enqueued before the last micro-batch's adds are resolved; bf16
 * and f16 take the words' path. rv_accumulator_clear next. */
RV_C_API rv_status rv_accumulator_finish_alone(rv_accumulator* accumulator, int op,
                                               uint64_t mean_over, int dtype, void* out,
                                               void* cuda_stream);
RV_C_API rv_status rv_accumulator_footprint(const rv_accumulator* accumulator, size_t* bytes,
                                            size_t* wide_blocks, size_t* flagged_blocks);

/* The digest tree's leaves (docs/DESIGN.md §12) of `size` bytes at d_bytes (device memory,
   4-byte aligned, size a multiple of 4), enqueued on cuda_stream: ceil(size / 4096) canonical
   16-byte XXH3-128 digests written to d_leaves (device memory). The caller finishes the root:
   XXH3-128 of size as u64 little-endian followed by the leaves. Not versioned by
   RV_C_API_VERSION: a caller looks the symbol up and falls back to the host reference. */
RV_C_API rv_status rv_cuda_digest_tree_leaves(int device, const void* d_bytes, size_t size,
                                              void* d_leaves, void* cuda_stream);
/* The same leaves over the concatenation of `count` pieces of device memory, read in place (no
   concatenated copy is made): pieces[2k] is piece k's device address, pieces[2k + 1] its byte
   count (4-byte aligned, a multiple of 4). The table is host memory, copied in stream order:
   it may be freed on return. Not versioned either: looked up by name. */
RV_C_API rv_status rv_cuda_digest_tree_leaves_of_pieces(int device, const uint64_t* pieces,
                                                        size_t count, void* d_leaves,
                                                        void* cuda_stream);

#ifdef __cplusplus
}
#endif

#endif /* REDUCE_VERIFY_C_H_ */
