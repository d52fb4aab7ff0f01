#include "core/transport/cuda_loopback/cuda_loopback_world.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/exact/exact_kernel.h"
#include "core/error.h"
#include "core/transport/in_process/in_process_transport.h"

namespace rv::cuda_loopback {
namespace {

// Each rank's word slot in the combine table starts on a 16-byte boundary, so the combine
// takes its vector path.
constexpr std::size_t kWordAlignment = 2;  // words

class CudaLoopbackTransport final : public in_process::InProcessTransport {
 public:
  CudaLoopbackTransport(in_process::InProcessWorld& world, std::uint32_t rank, int device,
                        void* stream, std::mutex& issue)
      : InProcessTransport(world, rank),
        device_(device),
        stream_(static_cast<cudaStream_t>(stream)),
        issue_(issue) {}

  std::string name() const override { return "cuda-loopback"; }
  std::string library_version() const override {
    return "CUDA runtime (device-to-device copies, one GPU)";
  }

  void library_sum(float* /*values*/, std::size_t /*n*/) override {
    throw InputError(
        "cuda-loopback has no library sum: its ranks are threads of one process on one GPU, "
        "with no collective library whose float sum it could report");
  }
  // The in-process stand-in's half sum would read these device buffers on the host: refused
  // as the float sum is, before anything moves.
  void library_sum_half(void* /*values*/, std::size_t /*n*/, DType dtype) override {
    throw InputError("cuda-loopback has no library sum of " + std::string(to_string(dtype)) +
                     ": its ranks are threads of one process on one GPU, with no collective "
                     "library whose sum it could report");
  }

  void all_reduce_int64(std::int64_t* values, std::size_t n, IntReduction op) override {
    settle();
    const BytesPost mine{values, n * sizeof(std::int64_t), true};
    const auto posts = meet(&mine);
    for (std::uint32_t p = 0; p < posts.size(); ++p) {
      require_same("all_reduce_int64", p, static_cast<const BytesPost*>(posts[p])->bytes,
                   mine.bytes);
    }
    const auto world = static_cast<std::uint32_t>(posts.size());
    if (rank() == 0 && n != 0) {
      const cuda_detail::ScopedDevice scope(device_);
      const std::size_t stride = (n + kWordAlignment - 1) / kWordAlignment * kWordAlignment;
      std::int64_t* table = combine_table(world * stride);
      for (std::uint32_t p = 0; p < world; ++p) {
        copy(table + p * stride, static_cast<const BytesPost*>(posts[p])->data, mine.bytes);
      }
      // Rank 0's own words are in the table (stream order), so the result may overwrite them.
      launch_combine_words(table, world, stride, n, op, values, stream_);
      settle();
    }
    meet(nullptr);  // rank 0's values hold the result
    if (rank() != 0 && n != 0) {
      copy(values, static_cast<const BytesPost*>(posts[0])->data, mine.bytes);
      settle();
    }
    meet(nullptr);  // rank 0's values may change again
  }

 protected:
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    RV_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }

  // One rank issues its copies at a time, as one thread would issue them all: the W rank
  // threads then never contend inside the runtime for its W^2 copies per exchange, while the
  // copies of every rank still run at once on their streams.
  void copy_all(const std::vector<Copy>& copies) override {
    const std::lock_guard<std::mutex> lock(issue_);
    for (const Copy& c : copies) copy(c.dst, c.src, c.bytes);
  }

  void copy_any(void* dst, bool dst_on_device, const void* src, bool src_on_device,
                std::size_t bytes) override {
    if (!dst_on_device && !src_on_device) {
      InProcessTransport::copy_any(dst, false, src, false, bytes);
      return;
    }
    RV_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
  }

  bool on_device(const void* p) const override {
    if (p == nullptr) return false;
    cudaPointerAttributes attributes{};
    RV_CUDA_CHECK(cudaPointerGetAttributes(&attributes, p));
    return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  }

  void settle() override { RV_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  std::int64_t* combine_table(std::size_t words) {
    if (table_.bytes() < words * sizeof(std::int64_t)) {
      table_ = DeviceBuffer(device_, words * sizeof(std::int64_t));
    }
    return static_cast<std::int64_t*>(table_.data());
  }

  const int device_;
  const cudaStream_t stream_;
  std::mutex& issue_;   // the world's: see copy_all
  DeviceBuffer table_;  // rank 0's combine table, grown when a call needs more
};

}  // namespace

CudaLoopbackWorld::CudaLoopbackWorld(std::uint32_t world, int device,
                                     std::chrono::milliseconds timeout, std::uint64_t delivery_seed)
    : world_(world, timeout, delivery_seed), device_(device) {
  const cuda_detail::ScopedDevice scope(device_);
  // A hint, not a requirement: where the runtime refuses it (flags fixed by an earlier
  // context), the waits spin and only the speed changes.
  if (cudaSetDeviceFlags(cudaDeviceScheduleYield) != cudaSuccess) (void)cudaGetLastError();
}

void CudaLoopbackWorld::leave(std::uint32_t rank) { world_.leave(rank); }

std::unique_ptr<Transport> CudaLoopbackWorld::connect(std::uint32_t rank,
                                                      const CudaFixedOrderDevice& device) {
  RV_ENFORCE_LT(InputError, rank, world_.world_size(), "cuda-loopback rank");
  RV_ENFORCE_EQ(InputError, device.device(), device_, "cuda-loopback: the GPU of rank", rank);
  return std::make_unique<CudaLoopbackTransport>(world_, rank, device.device(), device.stream(),
                                                 issue_);
}

}  // namespace rv::cuda_loopback
