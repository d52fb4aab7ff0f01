// The digest tree's leaves on a GPU (docs/DESIGN.md §12): core/cuda/digest/digest_tree_kernel.h's
// kernel on the caller's stream, reading a torch tensor's storage and writing the 16-byte leaf
// digests into another device tensor; the caller finishes the root on the host.
#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/digest/digest_tree_kernel.h"
#include "core/digest/digest_tree.h"
#include "core/error.h"

#include <vector>

extern "C" rv_status rv_cuda_digest_tree_leaves(int device, const void* d_bytes, size_t size,
                                                void* d_leaves, void* cuda_stream) {
  return rv::capi::guarded("rv_cuda_digest_tree_leaves", [&] {
    if (size == 0) return;
    if (d_bytes == nullptr || d_leaves == nullptr) throw rv::InputError("a null device pointer");
    const rv::cuda_detail::ScopedDevice scope(device);
    rv::launch_digest_tree_leaves(d_bytes, size, rv::xxh3_default_secret(),
                                  static_cast<std::uint8_t*>(d_leaves), cuda_stream);
  });
}

extern "C" rv_status rv_cuda_digest_tree_leaves_of_pieces(int device, const uint64_t* pieces,
                                                          size_t count, void* d_leaves,
                                                          void* cuda_stream) {
  return rv::capi::guarded("rv_cuda_digest_tree_leaves_of_pieces", [&] {
    if (count == 0) return;
    if (pieces == nullptr) throw rv::InputError("a null piece table");
    std::vector<rv::DigestPiece> table(count);
    std::uint64_t size = 0;
    for (std::size_t k = 0; k < count; ++k) {
      table[k] = rv::DigestPiece{reinterpret_cast<const void*>(pieces[2 * k]), pieces[2 * k + 1]};
      size += pieces[2 * k + 1];
    }
    if (size != 0 && d_leaves == nullptr) throw rv::InputError("a null device pointer");
    const rv::cuda_detail::ScopedDevice scope(device);
    rv::launch_digest_tree_leaves_of_pieces(table.data(), count, rv::xxh3_default_secret(),
                                            static_cast<std::uint8_t*>(d_leaves), cuda_stream);
  });
}
