// The NCCL entry points we use, resolved from the loaded library. nccl.h is included for its
// types and declarations only (decltype), never for linking. Private to core/cuda.
#pragma once

#include <nccl.h>

namespace rv {

struct NcclApi {
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetErrorString) get_error_string = nullptr;
  decltype(&ncclGetLastError) get_last_error = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRankConfig) comm_init_rank_config = nullptr;
  decltype(&ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&ncclCommFinalize) comm_finalize = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
};

}  // namespace rv
