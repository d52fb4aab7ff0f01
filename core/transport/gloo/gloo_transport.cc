#include "core/transport/gloo/gloo_transport.h"

#include <gloo/config.h>

#include <sys/stat.h>

#include "core/error.h"
#include "core/transport/gloo/gloo_context_transport.h"
#include "core/transport/gloo/gloo_failure.h"
#include "core/transport/gloo/gloo_rendezvous.h"
#include "core/transport/gloo/private_file_store.h"

namespace rv {

std::unique_ptr<Transport> connect_gloo(const GlooConnectOptions& options) {
  struct stat info {};
  if (options.store_dir.empty() || ::stat(options.store_dir.c_str(), &info) != 0 ||
      !S_ISDIR(info.st_mode)) {
    throw RuntimeFailure("gloo rendezvous on rank " + std::to_string(options.rank) +
                         ": the store directory '" + options.store_dir + "' does not exist");
  }
  std::shared_ptr<gloo_detail::PrivateFileStore> store;
  try {
    store = std::make_shared<gloo_detail::PrivateFileStore>(options.store_dir);
  } catch (const Error& e) {
    throw RuntimeFailure("gloo rendezvous on rank " + std::to_string(options.rank) + ": " +
                         e.what());
  }
  auto has_key = [&store](const std::string& key) { return store->has(key); };
  auto context = gloo_detail::connect_full_mesh(*store, has_key, options, options.store_dir);
  return std::make_unique<gloo_detail::GlooContextTransport>(std::move(context), options.timeout);
}

std::unique_ptr<Transport> connect_gloo_with_store(std::shared_ptr<::gloo::rendezvous::Store> store,
                                                   const GlooConnectOptions& options) {
  if (!store) throw InputError("gloo: no rendezvous store");
  const std::string store_name = options.store_dir.empty() ? "in memory" : options.store_dir;
  auto context = gloo_detail::connect_full_mesh(*store, gloo_detail::has_key_by_short_wait(*store),
                                                options, store_name);
  return std::make_unique<gloo_detail::GlooContextTransport>(std::move(context), options.timeout);
}

std::string gloo_library_version() {
  // Gloo has no run-time version query; config.h's number is what the headers say, and the
  // Debian package version (read by CMake at configure time) pins the snapshot.
  std::string version = "Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." +
                        std::to_string(GLOO_VERSION_MINOR) + "." +
                        std::to_string(GLOO_VERSION_PATCH);
  const std::string package = RV_GLOO_PACKAGE_VERSION;
  version +=
      package.empty() ? " (package version unknown)" : " (Debian libgloo-dev " + package + ")";
  return version;
}

}  // namespace rv
