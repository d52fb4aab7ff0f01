// run --transport cuda-loopback: every logical rank of every W on one GPU in this process.
#include "core/error.h"
#include "verify/supervised_run.h"

#if defined(RV_HAVE_CUDA)
#include "core/cuda/loopback_world.h"
#endif

namespace rv {

int run_cuda_loopback(const RunOptions& options) {
#if defined(RV_HAVE_CUDA)
  (void)options;
  throw InputError("cuda-loopback: not wired yet");
#else
  (void)options;
  throw InputError("transport cuda-loopback is not in this build (it needs CUDA)");
#endif
}

}  // namespace rv
