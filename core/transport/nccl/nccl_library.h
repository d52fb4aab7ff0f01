// NCCL, found at run time. The library is opened with dlopen("libnccl.so.2") by default, so
// LD_LIBRARY_PATH (or an explicit path) picks the NCCL under test and one build of ours
// runs against any of them; we never link it. Versions older than kNcclVersionFloor are
// refused. The version and the file it came from are recorded for reports and `info`.
// No NCCL or CUDA types here: the function table is in the private nccl_api.h.
#pragma once

#include <string>

namespace rv {

struct NcclApi;

// 2.18.0. Every entry point we use (non-blocking communicators through config.blocking,
// ncclCommFinalize, ncclGetLastError) exists since 2.14; the floor is set higher, at the
// oldest release line whose abort of a non-blocking communicator in init we trust.
inline constexpr int kNcclVersionFloor = 21800;
inline constexpr const char* kDefaultNcclLibrary = "libnccl.so.2";

class NcclLibrary {
 public:
  // Loads `file` once per process (later calls with the same name return the same library;
  // it is never unloaded, since NCCL's threads may outlive any of our objects). Sets
  // NCCL_NVLS_ENABLE=0 first unless it is set: NVLink multicast stays off (KINDS.md: it can
  // take a shared host's GPUs out of service). Throws RuntimeFailure naming the file when it
  // cannot be opened, lacks an NCCL symbol, or is older than the floor.
  static const NcclLibrary& load(const std::string& file = kDefaultNcclLibrary);

  int version_code() const { return version_code_; }  // 22809
  std::string version() const;                        // "2.28.9"
  const std::string& path() const { return path_; }   // the file the loader opened
  std::string describe() const;                       // "NCCL 2.28.9 (/usr/lib/…/libnccl.so.2)"
  const NcclApi& api() const { return *api_; }

  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;
  ~NcclLibrary();

 private:
  NcclLibrary() = default;
  int version_code_ = 0;
  std::string path_;
  NcclApi* api_ = nullptr;
};

// "2.28.9" from 22809 (and "2.8.4" from the pre-2.9 code 2804).
std::string nccl_version_text(int code);

// Throws RuntimeFailure when `code` is older than kNcclVersionFloor, naming `path`.
void check_nccl_version(int code, const std::string& path);

}  // namespace rv
