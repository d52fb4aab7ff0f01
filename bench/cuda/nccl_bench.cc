// What determinism costs over NCCL: the fixed-order all-reduce (NCCL moves bytes, our kernel
// folds) against ncclAllReduce's own sum, 8 B to 1 GiB, one process per GPU, as nccl-tests
// reports it: time per call (the slowest rank's), algbw = bytes / time and
// busbw = algbw · 2(W−1)/W. It needs two or more GPUs to mean anything; with one it runs
// as a smoke test. The fixed-order reducer runs as a GPU rank does by default: in pieces of
// 64 MiB tables, each piece folded while the next arrives (FixedOrderOptions::for_device,
// NcclTransport::start_exchange); where that makes more than one piece, the same reduction in
// one piece (no overlap) is timed too, so the pipeline's gain or cost shows.
//
// The reduce-scatter (docs/DESIGN.md §2.6) at every size too: the fixed-order and the exact
// reduce-scatter (rank p's shard of FSDP's padded plan) against ncclReduceScatter's own sum
// of the same arena (the library-sum contract's transport call), time per call the slowest
// rank's, and busbw = shard bytes · (W − 1) / time, nccl-tests' convention for it.
//
// Each rank is one process, started by a launcher the launch layer knows (our own
// variables, torchrun, Slurm, Open MPI), e.g. for W ranks on one host:
//   for r in $(seq 0 $((W-1))); do
//     REDUCE_VERIFY_RANK=$r REDUCE_VERIFY_WORLD_SIZE=$W REDUCE_VERIFY_LOCAL_RANK=$r
//     REDUCE_VERIFY_JOB_ID=bench-$$ REDUCE_VERIFY_RENDEZVOUS=/tmp/rv-bench
//     bench_nccl --json nccl-W$W.json &   (the three lines as one command)
//   done; wait
// (ci/device/run-nccl-bench.sh does this). Options: --min-bytes, --max-bytes, --json FILE,
// --timeout SECONDS.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/cuda/device_info.h"
#include "core/cuda/exact/cuda_exact_device.h"
#include "core/cuda/fixed_order/cuda_fixed_order_device.h"
#include "core/error.h"
#include "core/reducer/exact_reducer.h"
#include "core/reducer/fixed_order_reducer.h"
#include "core/rendezvous/job_directory.h"
#include "core/rendezvous/launcher_env.h"
#include "core/shard_plan.h"
#include "core/transport/nccl/nccl_transport.h"

namespace rv {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{1} << 30;
  std::string json;
  std::chrono::milliseconds timeout{120000};
};

BenchOptions parse_options(int argc, char** argv) {
  BenchOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw InputError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--min-bytes") {
      options.min_bytes = std::stoull(value());
    } else if (arg == "--max-bytes") {
      options.max_bytes = std::stoull(value());
    } else if (arg == "--json") {
      options.json = value();
    } else if (arg == "--timeout") {
      options.timeout = std::chrono::milliseconds(std::stoll(value()) * 1000);
    } else {
      throw InputError("unknown option " + arg +
                       " (use --min-bytes, --max-bytes, --json FILE, --timeout SECONDS)");
    }
  }
  if (options.min_bytes < 8 || options.max_bytes < options.min_bytes) {
    throw InputError("need 8 <= --min-bytes <= --max-bytes");
  }
  return options;
}

// Calls per size: enough that small messages are timed over many calls, few for 1 GiB.
// The same on every rank (a function of the size alone), so no rank waits for a call the
// others never make.
int iterations_for(std::size_t bytes) {
  return static_cast<int>(std::clamp<std::size_t>((std::size_t{4} << 30) / bytes, 5, 200));
}

// The pieces the fixed-order reducer cuts an arena of n floats into (its rule: shard 0, the
// largest, sets the table size; a world of one folds in place, in one).
std::size_t pieces_of(const FixedOrderOptions& options, std::size_t n, std::uint32_t world) {
  if (world == 1) return 1;
  const std::size_t table_bytes = (n + world - 1) / world * sizeof(float) * world;
  const std::size_t limit = options.piece_table_bytes;
  return limit == 0 || table_bytes <= limit ? 1 : (table_bytes + limit - 1) / limit;
}

// Seconds per call of `op`, the slowest rank's (every call returns with its bytes landed).
template <typename Op>
double seconds_per_call(Transport& transport, int iterations, Op op) {
  for (int i = 0; i < 3; ++i) op();
  transport.barrier();
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) op();
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  return static_cast<double>(transport.max_int(ns)) / 1e9 / iterations;
}

int run(int argc, char** argv) {
  const BenchOptions options = parse_options(argc, argv);
  const EnvLookup env = process_env();
  const LaunchRank launch = detect_launch_rank(env).value_or(LaunchRank{0, 1, 0, "none"});
  std::string job_id = derive_job_id(env).value_or("");
  if (job_id.empty()) {
    if (launch.world > 1) throw InputError("a world of ranks needs REDUCE_VERIFY_JOB_ID");
    job_id = "bench-nccl-" + std::to_string(::getpid());
  }
  const std::string root = rendezvous_root(env).value_or("/tmp/reduce-verify-bench");
  JobDirectory job = JobDirectory::open(root, job_id, launch.rank, launch.world, options.timeout);

  const int devices = cuda_device_count();
  if (devices == 0) throw RuntimeFailure("bench_nccl: no CUDA device: " + cuda_info().status);
  const int device = static_cast<int>(launch.local_rank % static_cast<std::uint32_t>(devices));
  CudaFixedOrderDevice fixed_order_device(device);
  NcclConnectOptions connect;
  connect.job_dir = job.path();
  connect.job_nonce = job.nonce();
  connect.rank = launch.rank;
  connect.world = launch.world;
  connect.device = device;
  connect.timeout = options.timeout;
  connect.stream = fixed_order_device.stream();
  std::unique_ptr<Transport> nccl = connect_nccl(connect);
  const FixedOrderOptions pipelined = FixedOrderOptions::for_device(fixed_order_device);
  FixedOrderReducer reducer(*nccl, fixed_order_device, pipelined);
  FixedOrderOptions whole = pipelined;
  whole.piece_table_bytes = 0;
  FixedOrderReducer one_piece(*nccl, fixed_order_device, whole);
  CudaExactDevice exact_device(fixed_order_device);
  ExactReducer exact(*nccl, exact_device);

  // Gradient-like values; the library's repeated in-place sums may overflow to inf, which
  // costs a GPU nothing extra. The fixed-order calls use the mean, which stays bounded.
  const std::size_t max_floats = options.max_bytes / sizeof(float);
  // Room for the reduce-scatter's padding (fewer than W floats) and for a shard apart.
  float* arena = fixed_order_device.allocate(max_floats + launch.world);
  float* shard = fixed_order_device.allocate(max_floats / launch.world + 1);
  const std::size_t chunk = std::min<std::size_t>(max_floats, std::size_t{1} << 24);
  const std::vector<float> values =
      generate_arena(ArenaSpec{kLatestGenerator, Distribution::kNormal, 7}, launch.rank, chunk);
  for (std::size_t at = 0; at < max_floats; at += chunk) {
    fixed_order_device.upload(arena + at, values.data(),
                              std::min(chunk, max_floats - at) * sizeof(float));
  }

  const CudaInfo info = cuda_info();
  const double bus_factor = 2.0 * (launch.world - 1) / launch.world;
  nlohmann::json results = nlohmann::json::array();
  if (launch.rank == 0) {
    std::printf("# %s, %u ranks, %s\n", nccl->library_version().c_str(), launch.world,
                fixed_order_device.name());
    std::printf("%12s %11s | %11s %9s %9s | %11s %9s %9s | %6s | %6s %11s | %11s %11s %11s\n",
                "bytes", "floats", "fixed us", "algbw", "busbw", "nccl us", "algbw", "busbw",
                "ratio", "pieces", "1-piece us", "fixed rs us", "exact rs us", "nccl rs us");
  }
  for (std::size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 2) {
    const std::size_t n = bytes / sizeof(float);
    const int iterations = iterations_for(bytes);
    const double fixed =
        seconds_per_call(*nccl, iterations, [&] { reducer.all_reduce(arena, n, Op::kMean); });
    const double library =
        seconds_per_call(*nccl, iterations, [&] { nccl->library_sum(arena, n); });
    const std::size_t pieces = pieces_of(pipelined, n, launch.world);
    const double fixed_one_piece =
        pieces > 1 ? seconds_per_call(*nccl, iterations,
                                      [&] { one_piece.all_reduce(arena, n, Op::kMean); })
                   : fixed;
    const std::size_t s = padded_shard_size(n, launch.world);
    const std::size_t mine = padded_shard_plan(n, launch.world)[launch.rank].count;
    const double fixed_rs = seconds_per_call(*nccl, iterations, [&] {
      reducer.reduce_scatter(arena, n, shard, mine, Op::kMean);
    });
    const double exact_rs = seconds_per_call(*nccl, iterations, [&] {
      exact.reduce_scatter(arena, n, shard, mine, Op::kMean);
    });
    const double library_rs = seconds_per_call(*nccl, iterations, [&] {
      nccl->library_reduce_scatter(arena, s, DType::kF32);
    });
    const double fixed_algbw = static_cast<double>(bytes) / fixed / 1e9;
    const double library_algbw = static_cast<double>(bytes) / library / 1e9;
    if (launch.rank == 0) {
      std::printf(
          "%12zu %11zu | %11.2f %9.2f %9.2f | %11.2f %9.2f %9.2f | %6.2f | %6zu %11.2f | %11.2f "
          "%11.2f %11.2f\n",
          bytes, n, fixed * 1e6, fixed_algbw, fixed_algbw * bus_factor, library * 1e6,
          library_algbw, library_algbw * bus_factor, fixed / library, pieces,
          fixed_one_piece * 1e6, fixed_rs * 1e6, exact_rs * 1e6, library_rs * 1e6);
      std::fflush(stdout);
    }
    results.push_back({{"bytes", bytes},
                       {"floats", n},
                       {"iterations", iterations},
                       {"fixed_order_us", fixed * 1e6},
                       {"fixed_order_algbw_GBps", fixed_algbw},
                       {"fixed_order_busbw_GBps", fixed_algbw * bus_factor},
                       {"nccl_allreduce_us", library * 1e6},
                       {"nccl_allreduce_algbw_GBps", library_algbw},
                       {"nccl_allreduce_busbw_GBps", library_algbw * bus_factor},
                       {"fixed_over_nccl_time", fixed / library},
                       {"fixed_order_pieces", pieces},
                       {"fixed_order_one_piece_us", fixed_one_piece * 1e6},
                       {"pipelined_over_one_piece_time", fixed / fixed_one_piece},
                       {"fixed_order_reduce_scatter_us", fixed_rs * 1e6},
                       {"exact_reduce_scatter_us", exact_rs * 1e6},
                       {"nccl_reduce_scatter_us", library_rs * 1e6},
                       {"reduce_scatter_busbw_factor", static_cast<double>(launch.world - 1)},
                       {"fixed_rs_over_nccl_rs_time", fixed_rs / library_rs},
                       {"exact_rs_over_nccl_rs_time", exact_rs / library_rs}});
  }
  fixed_order_device.free(arena);
  fixed_order_device.free(shard);
  if (launch.rank == 0 && !options.json.empty()) {
    nlohmann::json report = {{"context",
                              {{"world", launch.world},
                               {"gpu", info.gpus.empty() ? "" : describe(info.gpus[device])},
                               {"nvidia_driver", info.driver_release},
                               {"cuda_driver", cuda_version_text(info.driver_version)},
                               {"cuda_runtime", cuda_version_text(info.runtime_version)},
                               {"nccl", nccl->library_version()},
                               {"busbw_factor", bus_factor}}},
                             {"results", results}};
    std::ofstream(options.json) << report.dump(2) << "\n";
  }
  nccl.reset();
  job.close();
  return 0;
}

}  // namespace
}  // namespace rv

int main(int argc, char** argv) {
  try {
    return rv::run(argc, argv);
  } catch (const rv::InputError& e) {
    std::fprintf(stderr, "bench_nccl: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_nccl: %s\n", e.what());
    return 3;
  }
}
