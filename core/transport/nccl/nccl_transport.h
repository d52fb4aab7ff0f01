// The NCCL transport (docs/DESIGN.md §5): one process per GPU, bytes only. exchange is grouped
// ncclSend/ncclRecv (the own slot by a device copy), all_gather and broadcast move bytes,
// library_sum is ncclAllReduce's own float sum (the library-sum contract; library_sum_half the
// same over bf16/f16 elements with ncclBfloat16 / ncclFloat16), max_int an int64
// max. The fixed-order contract uses only the byte-moving calls; its arithmetic is our fold
// kernel (CudaFixedOrderDevice), never NCCL's.
//
// Overlap: given the caller's stream (NcclConnectOptions::stream), start_exchange of a plan
// with counts_agreed enqueues the exchange on a second, transport-owned stream that starts
// after the work already on the caller's stream, and returns while the bytes move, so the
// caller's fold runs meanwhile; its wait() makes the caller's stream wait for the bytes. A
// plan whose counts are still to be checked, or a transport without the caller's stream, runs
// start_exchange as exchange, before returning.
//
// Fail fast: the communicator is non-blocking (config.blocking = 0), so no NCCL call ever
// blocks; every wait (the unique id, init, each collective, each started exchange's enqueue
// and its wait(), finalize) polls under a deadline, and never blocks in a CUDA
// synchronisation that a peer could keep from ending. When a deadline passes or NCCL reports
// an error, the communicator is aborted (ncclCommAbort, once: abort frees it) and the call
// throws DeadlineExceeded or RuntimeFailure naming the rank, the call and the deadline; the
// transport is unusable afterwards. A started exchange destroyed before its wait() (an
// exception unwinding the caller) aborts the communicator too: its bytes could still land in
// buffers the caller reuses. A dead or frozen peer is a named error, never a hang.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/transport/nccl/nccl_library.h"
#include "core/transport/transport.h"

namespace rv {

struct NcclConnectOptions {
  std::string job_dir;    // this launch's shared directory: rank 0 publishes the id there
  std::string job_nonce;  // the launch's nonce; when set, an id record must carry it
  std::uint32_t rank = 0;
  std::uint32_t world = 1;
  int device = 0;  // the CUDA device of this rank
  // Every wait: rendezvous (id + init together), each collective, finalize.
  std::chrono::milliseconds timeout{60000};
  // The cudaStream_t to enqueue on, normally CudaFixedOrderDevice::stream(): then the bytes NCCL
  // moves and the folds that read them are ordered on one stream. nullptr: the transport
  // makes its own and waits for the whole device before each call.
  void* stream = nullptr;
  std::string library = kDefaultNcclLibrary;  // file name or path for dlopen
};

// Joins the world. Every call of the returned transport takes device pointers of
// `device` and returns once its bytes have landed (a started exchange: once its wait()
// returns). Throws InputError for bad options,
// DeadlineExceeded when the id or a rank does not arrive in time, RuntimeFailure otherwise.
std::unique_ptr<Transport> connect_nccl(const NcclConnectOptions& options);

}  // namespace rv
