#include "bench/cuda/harness.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "bench/cuda/l2_flush.h"
#include "core/cuda/device_info.h"
#include "core/transport/nccl/nccl_library.h"

namespace rv::bench {
namespace {

// A CUDA event, destroyed with its scope.
class Event {
 public:
  Event() { check(cudaEventCreate(&event_), "event"); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  operator cudaEvent_t() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// --flush_l2: an L2Flush before each timed kernel and copy, made once for the run.
bool flush_l2 = false;
const L2Flush& l2_flush() {
  static const L2Flush flush;
  return flush;
}

// Takes --flush_l2 out of argv (Google Benchmark would refuse it); whether it was there.
bool take_flush_flag(int& argc, char** argv) {
  bool found = false;
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::strcmp(argv[i], "--flush_l2") == 0) {
      found = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  if (kept < argc) argv[kept] = nullptr;  // argv stays null-terminated
  argc = kept;
  return found;
}

void add_shared_context() {
  const CudaInfo info = cuda_info();
  benchmark::AddCustomContext("cuda_driver", cuda_version_text(info.driver_version));
  benchmark::AddCustomContext("cuda_runtime", cuda_version_text(info.runtime_version));
  if (!info.gpus.empty()) {
    benchmark::AddCustomContext("gpu", describe(info.gpus[0]));
    benchmark::AddCustomContext("gpu_pci_bus_id", info.gpus[0].pci_bus_id);
  }
  benchmark::AddCustomContext("nvidia_driver", info.driver_release);
  try {
    benchmark::AddCustomContext("nccl", NcclLibrary::load().describe());
  } catch (const std::exception& e) {
    benchmark::AddCustomContext("nccl", std::string("not loaded: ") + e.what());
  }
}

}  // namespace

double time_kernel_against_copy(benchmark::State& state, cudaStream_t stream,
                                const std::function<void()>& kernel, double kernel_bytes,
                                const DeviceCopy& copy, const KernelCounters& counters) {
  const auto copy_once = [&] {
    check(cudaMemcpyAsync(copy.target, copy.source, copy.bytes, cudaMemcpyDeviceToDevice, stream),
          "copy");
  };
  const Event start, kernel_done, flushed, copy_done;
  for (int i = 0; i < kWarmup; ++i) {
    kernel();
    copy_once();
  }
  check(cudaStreamSynchronize(stream), "warm-up");

  std::vector<double> kernel_ms, copy_ms;
  for (auto _ : state) {
    // A lead-in (a copy, or the flush) keeps the stream busy while the timed kernel and copy
    // are enqueued: an event recorded on an idle stream would count the host's launch latency
    // as device time.
    if (flush_l2) {
      l2_flush().enqueue(stream);
    } else {
      copy_once();
    }
    check(cudaEventRecord(start, stream), "record");
    kernel();
    check(cudaEventRecord(kernel_done, stream), "record");
    if (flush_l2) l2_flush().enqueue(stream);
    check(cudaEventRecord(flushed, stream), "record");
    copy_once();
    check(cudaEventRecord(copy_done, stream), "record");
    check(cudaEventSynchronize(copy_done), "sync");
    float k = 0, c = 0;
    check(cudaEventElapsedTime(&k, start, kernel_done), "elapsed");
    check(cudaEventElapsedTime(&c, flushed, copy_done), "elapsed");
    kernel_ms.push_back(k);
    copy_ms.push_back(c);
    state.SetIterationTime(k / 1e3);
  }
  check(cudaGetLastError(), "kernel");

  const double copy_traffic = 2.0 * static_cast<double>(copy.bytes);
  const double kernel_bw = kernel_bytes / (median(kernel_ms) / 1e3);
  const double copy_bw = copy_traffic / (median(copy_ms) / 1e3);
  state.SetBytesProcessed(static_cast<std::int64_t>(kernel_bytes) * state.iterations());
  state.counters[counters.gbps] = kernel_bw / 1e9;
  state.counters["copy_GBps"] = copy_bw / 1e9;
  state.counters["copy_fraction"] = kernel_bw / copy_bw;
  state.counters[counters.median_ms] = median(kernel_ms);
  state.counters["copy_median_ms"] = median(copy_ms);
  return kernel_bw / copy_bw;
}

bool l2_flush_on() { return flush_l2; }

int run_cuda_benchmarks(int argc, char** argv, const char* program,
                        const std::function<void()>& extra_context,
                        const std::function<void()>& after) {
  flush_l2 = take_flush_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!cuda_device_present()) {
    std::printf("%s: no CUDA device (%s); nothing to measure\n", program,
                cuda_info().status.c_str());
    return 0;
  }
  add_shared_context();
  benchmark::AddCustomContext(
      "l2_flush", flush_l2 ? "a read of " + std::to_string(l2_flush().bytes() >> 20) +
                                 " MiB before each timed kernel and copy (--flush_l2)"
                           : "none: each timed kernel follows a copy, each timed copy a kernel");
  if (extra_context) extra_context();
  benchmark::RunSpecifiedBenchmarks();
  if (after) after();
  benchmark::Shutdown();
  return 0;
}

}  // namespace rv::bench
