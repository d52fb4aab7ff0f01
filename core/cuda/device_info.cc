#include "core/cuda/device_info.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/cuda/cuda_check.h"

namespace rv {
namespace {

// The release of the loaded kernel module, the first dotted number on the line
// "NVRM version: NVIDIA UNIX [Open ]Kernel Module for x86_64  580.159.04  Release Build …"
// (the runtime API knows only the CUDA version the driver supports).
std::string read_driver_release() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    const bool dotted_number = word.find('.') != std::string::npos &&
                               word.find_first_not_of("0123456789.") == std::string::npos &&
                               word.front() != '.';
    if (dotted_number) return word;
  }
  return "";
}

std::string error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

}  // namespace

CudaInfo cuda_info() {
  CudaInfo info;
  // With the static CUDA runtime these calls load the driver on demand; without one they
  // return an error code (never a crash), which is what makes this safe on any box.
  (void)cudaDriverGetVersion(&info.driver_version);
  (void)cudaRuntimeGetVersion(&info.runtime_version);
  info.driver_release = read_driver_release();
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    info.status = info.driver_version == 0 ? "no CUDA driver (" + error_text(status) + ")"
                                           : "no usable CUDA device (" + error_text(status) + ")";
    return info;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    GpuInfo gpu;
    gpu.index = d;
    gpu.name = prop.name;
    gpu.major = prop.major;
    gpu.minor = prop.minor;
    gpu.memory_bytes = prop.totalGlobalMem;
    gpu.multiprocessors = prop.multiProcessorCount;
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, d) == cudaSuccess) gpu.pci_bus_id = bus;
    info.gpus.push_back(gpu);
  }
  info.status = info.gpus.empty() ? "no CUDA device" : "ok";
  return info;
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

bool cuda_device_present() { return cuda_device_count() > 0; }

std::string cuda_version_text(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string describe(const GpuInfo& gpu) {
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB",
                static_cast<double>(gpu.memory_bytes) / (1024.0 * 1024.0 * 1024.0));
  return gpu.name + " (sm_" + std::to_string(gpu.major) + std::to_string(gpu.minor) + ", " +
         memory + ", " + std::to_string(gpu.multiprocessors) + " SMs)";
}

}  // namespace rv
