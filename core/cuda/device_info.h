// What this box has in GPUs, for `info`, reports and test skips. Asking never crashes and
// never throws on a box without a driver or a GPU: it says so instead.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace rv {

struct GpuInfo {
  int index = 0;
  std::string name;          // the CUDA device name, as cudaGetDeviceProperties gives it
  int major = 0, minor = 0;  // compute capability
  std::size_t memory_bytes = 0;
  int multiprocessors = 0;
  std::string pci_bus_id;  // "0000:18:00.0"
};

struct CudaInfo {
  int driver_version = 0;      // CUDA version the driver supports, e.g. 13000; 0 = no driver
  int runtime_version = 0;     // the CUDA runtime linked into this program, e.g. 13000
  std::string driver_release;  // the kernel driver's release, e.g. "580.159.04"; "" if unknown
  std::vector<GpuInfo> gpus;
  std::string status;  // "ok", or why there are no GPUs ("no CUDA driver", …)
};

// Queries the driver and every device. Never throws.
CudaInfo cuda_info();

// True when at least one CUDA device can be used. Never throws; false without a driver.
bool cuda_device_present();
int cuda_device_count();  // 0 without a driver

// "13.0" from 13000; "none" from 0.
std::string cuda_version_text(int version);
// "<name> (sm_<major><minor>, <memory> GiB, <count> SMs)"
std::string describe(const GpuInfo& gpu);

}  // namespace rv
