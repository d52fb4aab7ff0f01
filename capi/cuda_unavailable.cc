// The CUDA entry points of a library built without CUDA (no nvcc, or RV_WITH_CUDA=OFF): the
// same symbols, so a caller links either build, answering RV_UNSUPPORTED with a message that
// says why.
#include "capi/accumulator_handle.h"
#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"

namespace {

[[noreturn]] void unsupported() {
  throw rv::capi::Unsupported(
      "this libreduce_verify_c.so was built without CUDA (no CUDA compiler, or "
      "-DRV_WITH_CUDA=OFF): rebuild it on a machine with /usr/local/cuda to reduce GPU tensors");
}

}  // namespace

extern "C" rv_status rv_cuda_fixed_order_reduce_stacked(int, const float*, uint32_t, size_t, size_t,
                                                        int, float*, void*) {
  return rv::capi::guarded("rv_cuda_fixed_order_reduce_stacked", [] { unsupported(); });
}

extern "C" rv_status rv_cuda_exact_reduce_stacked(int, const float*, uint32_t, size_t, size_t, int,
                                                  float*, void*) {
  return rv::capi::guarded("rv_cuda_exact_reduce_stacked", [] { unsupported(); });
}

extern "C" rv_status rv_cuda_fixed_order_reduce_stacked_dtype(int, const void*, uint32_t, size_t,
                                                              size_t, int, int, void*, void*) {
  return rv::capi::guarded("rv_cuda_fixed_order_reduce_stacked_dtype", [] { unsupported(); });
}

extern "C" rv_status rv_cuda_exact_reduce_stacked_dtype(int, const void*, uint32_t, size_t, size_t,
                                                        int, int, void*, void*) {
  return rv::capi::guarded("rv_cuda_exact_reduce_stacked_dtype", [] { unsupported(); });
}

extern "C" rv_status rv_cuda_digest_tree_leaves(int, const void*, size_t, void*, void*) {
  return rv::capi::guarded("rv_cuda_digest_tree_leaves", [] { unsupported(); });
}

extern "C" rv_status rv_cuda_digest_tree_leaves_of_pieces(int, const uint64_t*, size_t, void*,
                                                          void*) {
  return rv::capi::guarded("rv_cuda_digest_tree_leaves_of_pieces", [] { unsupported(); });
}

namespace rv::capi {
std::unique_ptr<GradientAccumulator> make_cuda_accumulator(std::size_t, int) { unsupported(); }
}  // namespace rv::capi
