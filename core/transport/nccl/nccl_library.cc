#include "core/transport/nccl/nccl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/transport/nccl/nccl_api.h"

namespace rv {
namespace {

template <typename Fn>
void resolve(void* handle, const std::string& file, const char* symbol, Fn& fn) {
  dlerror();
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    throw RuntimeFailure("'" + file + "' is not a usable NCCL: symbol " + symbol + " is missing");
  }
  fn = reinterpret_cast<Fn>(address);
}

}  // namespace

std::string nccl_version_text(int code) {
  // NCCL_VERSION(X,Y,Z) is X*10000 + Y*100 + Z since 2.9; before that X*1000 + Y*100 + Z.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

void check_nccl_version(int code, const std::string& path) {
  if (code < kNcclVersionFloor) {
    throw RuntimeFailure("NCCL " + nccl_version_text(code) + " at '" + path +
                         "' is older than the oldest supported, " +
                         nccl_version_text(kNcclVersionFloor) +
                         "; point LD_LIBRARY_PATH at a newer libnccl.so.2");
  }
}

std::string NcclLibrary::version() const { return nccl_version_text(version_code_); }

std::string NcclLibrary::describe() const { return "NCCL " + version() + " (" + path_ + ")"; }

NcclLibrary::~NcclLibrary() { delete api_; }

const NcclLibrary& NcclLibrary::load(const std::string& file) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<NcclLibrary>> loaded;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = loaded.find(file); found != loaded.end()) return *found->second;

  // Before the library can read its environment: NVLink multicast (NVLS) stays off.
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);

  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw RuntimeFailure("cannot load NCCL from '" + file + "': " + (why ? why : "unknown error") +
                         " (set LD_LIBRARY_PATH to the folder of libnccl.so.2, or give its path)");
  }
  std::unique_ptr<NcclLibrary> library(new NcclLibrary());
  library->api_ = new NcclApi();
  NcclApi& api = *library->api_;
  try {
    resolve(handle, file, "ncclGetVersion", api.get_version);
    resolve(handle, file, "ncclGetErrorString", api.get_error_string);
    resolve(handle, file, "ncclGetLastError", api.get_last_error);
    resolve(handle, file, "ncclGetUniqueId", api.get_unique_id);
    resolve(handle, file, "ncclCommInitRankConfig", api.comm_init_rank_config);
    resolve(handle, file, "ncclCommGetAsyncError", api.comm_get_async_error);
    resolve(handle, file, "ncclCommFinalize", api.comm_finalize);
    resolve(handle, file, "ncclCommDestroy", api.comm_destroy);
    resolve(handle, file, "ncclCommAbort", api.comm_abort);
    resolve(handle, file, "ncclGroupStart", api.group_start);
    resolve(handle, file, "ncclGroupEnd", api.group_end);
    resolve(handle, file, "ncclSend", api.send);
    resolve(handle, file, "ncclRecv", api.recv);
    resolve(handle, file, "ncclBroadcast", api.broadcast);
    resolve(handle, file, "ncclAllGather", api.all_gather);
    resolve(handle, file, "ncclAllReduce", api.all_reduce);
    resolve(handle, file, "ncclReduceScatter", api.reduce_scatter);
  } catch (...) {
    dlclose(handle);  // nothing of it ran: safe to unload
    throw;
  }

  // The file the loader really opened: with a bare name it searched LD_LIBRARY_PATH and the
  // cache, and that answer is what a report must show.
  Dl_info where{};
  library->path_ =
      dladdr(reinterpret_cast<void*>(api.get_version), &where) != 0 && where.dli_fname != nullptr
          ? where.dli_fname
          : file;
  int code = 0;
  if (api.get_version(&code) != ncclSuccess) {
    throw RuntimeFailure("ncclGetVersion failed in '" + library->path_ + "'");
  }
  check_nccl_version(code, library->path_);
  library->version_code_ = code;
  return *loaded.emplace(file, std::move(library)).first->second;
}

}  // namespace rv
