# The public include tree: the headers `cmake --install` puts under include/reduce_verify/, at
# their repository paths ("core/fold.h"), and no others. Reviewed by hand, per exported part:
#   RV_PUBLIC_ENTRY_<target>     what a trainer linking that part includes;
#   RV_PUBLIC_INCLUDED_<target>  the headers of the part that those entries (of any part)
#                                include, directly or not, and that no consumer needs to name.
# A part's headers are installed when its target is built (cmake/install.cmake). The lists must
# be exactly the include closure of the entries: CTest public_headers_closure
# (tests/consumer/check_public_headers.py) fails on a header the closure needs but the lists
# lack, a listed header outside it, a *_detail.h, or one that includes a CUDA header or uses
# CUDA types (docs/DESIGN.md §7). Everything else under core/ (detail headers, kernels,
# cuda_check.h, the transports' internals) is private to the build.
# To make a header public: add it to its part's ENTRY list, then add whatever the test names as
# missing to the INCLUDED lists (or, if that is a detail or CUDA header, fix the header).

# reduce_verify::core (rv_core): contracts, dtypes, the CPU fold, arenas and case ids, the
# oracle, errors and deadlines, the shard plan, and the one transport interface.
set(RV_PUBLIC_ENTRY_rv_core
  core/arena.h
  core/case_id.h
  core/contract.h
  core/deadline.h
  core/dtype.h
  core/dtype_arrays.h
  core/error.h
  core/fold.h
  core/fp_environment.h
  core/oracle/case_reduction.h
  core/oracle/emulated_world.h
  core/oracle/reference.h
  core/shard_plan.h
  core/transport/transport.h)
set(RV_PUBLIC_INCLUDED_rv_core
  core/arena_law.h      # arena.h
  core/dtype_law.h      # core/exact/exact_law.h
  core/fold_law.h       # arena_law.h, dtype_law.h
  core/host_device.h    # the laws (RV_HD: `inline` to a host compiler)
  core/int_reduction.h  # transport.h
  core/seed_law.h)      # arena_law.h, core/launch/dist_context.h

# reduce_verify::exact (rv_exact, linked by rv_core): the exact contract on the CPU.
set(RV_PUBLIC_ENTRY_rv_exact
  core/exact/exact_accumulator.h
  core/exact/exact_reduction.h
  core/exact/stacked_in_double.h)
set(RV_PUBLIC_INCLUDED_rv_exact
  core/exact/exact_law.h    # exact_accumulator.h
  core/exact/exact_plan.h   # host_exact.h, the exact devices
  core/exact/host_exact.h)  # stacked_in_double.h

# reduce_verify::accumulator: the exact gradient accumulator's interface and its host
# implementation (the GPU's is reduce_verify::cuda's CudaAccumulator).
set(RV_PUBLIC_ENTRY_rv_accumulator
  core/accumulator/gradient_accumulator.h
  core/accumulator/host_accumulator.h)
set(RV_PUBLIC_INCLUDED_rv_accumulator)

# reduce_verify::digest: digests of arenas, cases and tensors (the digest tree's root).
set(RV_PUBLIC_ENTRY_rv_digest
  core/digest/digest.h
  core/digest/digest_tree.h)
set(RV_PUBLIC_INCLUDED_rv_digest)

# reduce_verify::rendezvous: the launcher's rank contract and the job directory.
set(RV_PUBLIC_ENTRY_rv_rendezvous
  core/rendezvous/launcher_env.h)
set(RV_PUBLIC_INCLUDED_rv_rendezvous
  core/rendezvous/job_directory.h)  # core/launch/dist_context.h

# reduce_verify::reducer: the three reducers and the device interfaces they run on.
set(RV_PUBLIC_ENTRY_rv_reducer
  core/reducer/exact_device.h
  core/reducer/exact_reducer.h
  core/reducer/fixed_order_device.h
  core/reducer/fixed_order_reducer.h
  core/reducer/library_sum_reducer.h)
set(RV_PUBLIC_INCLUDED_rv_reducer
  core/reducer/device_kind.h       # exact_device.h, fixed_order_device.h
  core/reducer/growing_scratch.h)  # exact_reducer.h, fixed_order_reducer.h

# reduce_verify::launch: DistContext and the self-spawn supervisor.
set(RV_PUBLIC_ENTRY_rv_launch
  core/launch/dist_context.h
  core/launch/supervisor.h)
set(RV_PUBLIC_INCLUDED_rv_launch)

# reduce_verify::in_process: ranks as threads of one process.
set(RV_PUBLIC_ENTRY_rv_in_process
  core/transport/in_process/in_process_transport.h
  core/transport/in_process/in_process_world.h
  core/transport/in_process/rank_threads.h)
set(RV_PUBLIC_INCLUDED_rv_in_process)

# reduce_verify::membership: linked by the Gloo transport; nothing a consumer includes.
set(RV_PUBLIC_ENTRY_rv_membership)
set(RV_PUBLIC_INCLUDED_rv_membership)

# reduce_verify::gloo: connect_gloo (Gloo's types forward-declared only).
set(RV_PUBLIC_ENTRY_rv_gloo
  core/transport/gloo/gloo_transport.h)
set(RV_PUBLIC_INCLUDED_rv_gloo)

# reduce_verify::cuda: the GPU devices, the GPU accumulator, device buffers and device info,
# all without CUDA types (streams are void*).
set(RV_PUBLIC_ENTRY_rv_cuda
  core/cuda/accumulator/cuda_accumulator.h
  core/cuda/device_buffer.h
  core/cuda/device_info.h
  core/cuda/exact/cuda_exact_device.h
  core/cuda/fixed_order/cuda_fixed_order_device.h)
set(RV_PUBLIC_INCLUDED_rv_cuda)

# reduce_verify::nccl: the NCCL transport and its unique id (nccl.h stays inside).
set(RV_PUBLIC_ENTRY_rv_nccl
  core/transport/nccl/nccl_transport.h
  core/transport/nccl/nccl_unique_id.h)
set(RV_PUBLIC_INCLUDED_rv_nccl
  core/transport/nccl/nccl_library.h)  # nccl_transport.h

# reduce_verify::cuda_loopback: the one-GPU loopback world (its rank threads with run's
# reducers, verify/live/loopback_ranks.h, are the tool's, not the package's).
set(RV_PUBLIC_ENTRY_rv_cuda_loopback
  core/transport/cuda_loopback/cuda_loopback_world.h)
set(RV_PUBLIC_INCLUDED_rv_cuda_loopback)

# Generated in the build folder (core/build_info), installed beside the rest.
set(RV_PUBLIC_GENERATED_HEADERS core/build_info/build_info.h)

set(RV_PUBLIC_PARTS rv_core rv_exact rv_accumulator rv_digest rv_rendezvous rv_reducer rv_launch rv_in_process
    rv_membership rv_gloo rv_cuda rv_nccl rv_cuda_loopback)
# Every part's lists together, whatever this build has (the closure test checks these).
set(RV_PUBLIC_ENTRY_HEADERS)
set(RV_PUBLIC_INCLUDED_HEADERS)
foreach(part IN LISTS RV_PUBLIC_PARTS)
  list(APPEND RV_PUBLIC_ENTRY_HEADERS ${RV_PUBLIC_ENTRY_${part}})
  list(APPEND RV_PUBLIC_INCLUDED_HEADERS ${RV_PUBLIC_INCLUDED_${part}})
endforeach()
