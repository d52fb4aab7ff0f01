#include "core/transport/gloo/gloo_rendezvous.h"

#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <csignal>
#include <memory>
#include <sstream>
#include <vector>

#include "core/deadline.h"
#include "core/error.h"
#include "core/transport/gloo/gloo_failure.h"
#include "core/transport/gloo/member_connections.h"
#include "core/transport/gloo/pair_mesh.h"
#include "core/transport/gloo/socket_address.h"
#include "core/transport/membership/membership_secret.h"

namespace rv {
namespace gloo_detail {
namespace {

// Gloo writes to its sockets with writev(2), which raises SIGPIPE when the peer has gone:
// a survivor of a killed rank would die of the signal instead of reporting the peer. The
// default action is replaced once; a handler the program installed itself is kept.
void ignore_sigpipe_unless_handled() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    std::signal(SIGPIPE, SIG_IGN);
  }
}

void check_options(const GlooConnectOptions& options) {
  RV_ENFORCE_GE(InputError, options.world, 1u, "gloo: a world needs at least one rank");
  RV_ENFORCE_LT(InputError, options.rank, options.world, "gloo: rank out of range");
  RV_ENFORCE_LT(InputError, 0, options.timeout.count(), "gloo: the timeout must be positive");
  if (options.hostname.empty()) throw InputError("gloo: empty hostname for the TCP device");
}

// Polls every other rank's arrival key until all are there or the deadline passes; then the
// error names exactly the ranks still missing.
void await_arrivals(const StoreHasKey& has_key, const GlooConnectOptions& options,
                    const std::string& label) {
  const Deadline deadline(options.timeout);
  // Each poll already waits up to 1 ms per missing rank (has_key_by_short_wait): 10 ms
  // between polls keeps a store of many ranks from being asked continuously.
  Backoff backoff(std::chrono::milliseconds(10), std::chrono::milliseconds(10));
  std::vector<bool> arrived(options.world, false);
  arrived[options.rank] = true;
  for (;;) {
    std::vector<std::uint32_t> missing;
    for (std::uint32_t r = 0; r < options.world; ++r) {
      if (!arrived[r]) arrived[r] = has_key(arrival_key(r));
      if (!arrived[r]) missing.push_back(r);
    }
    if (missing.empty()) return;
    if (deadline.passed()) {
      throw DeadlineExceeded(label + ": " + ranks_text(missing) + " did not arrive within " +
                             format_duration(options.timeout));
    }
    backoff.sleep(deadline);
  }
}

}  // namespace

std::string arrival_key(std::uint32_t rank) {
  return "reduce-verify/arrived/" + std::to_string(rank);
}

StoreHasKey has_key_by_short_wait(::gloo::rendezvous::Store& store) {
  return [&store](const std::string& key) {
    try {
      store.wait({key}, std::chrono::milliseconds(1));
      return true;
    } catch (...) {
      return false;
    }
  };
}

std::shared_ptr<::gloo::Context> connect_full_mesh(::gloo::rendezvous::Store& store,
                                                   const StoreHasKey& has_key,
                                                   const GlooConnectOptions& options,
                                                   const std::string& store_name) {
  check_options(options);
  ignore_sigpipe_unless_handled();
  std::ostringstream label_text;
  label_text << "gloo rendezvous on rank " << options.rank << " of " << options.world << " (store "
             << store_name << ")";
  const std::string label = label_text.str();

  // Resolved here, not by Gloo: its lookup crashes on a name that does not resolve. Gloo
  // gets the numeric address, which it resolves to itself.
  const auto cannot_create = [&](const std::string& why) {
    return RuntimeFailure(label + ": cannot create a TCP device on '" + options.hostname +
                          "' (--hostname must be an address or name of this host): " + why);
  };
  SocketAddress bind;
  try {
    bind = resolve_bind_address(options.hostname);
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    throw cannot_create(e.what());
  }
  std::shared_ptr<::gloo::transport::Device> device;
  try {
    ::gloo::transport::tcp::attr attr;
    attr.hostname = bind.ip();
    device = ::gloo::transport::tcp::CreateDevice(attr);
  } catch (...) {
    throw RuntimeFailure(
        label + ": cannot create a TCP device on '" + options.hostname +
        "' (--hostname must be an address or name of this host): " + current_exception_text());
  }
  // Listening before arriving: the higher ranks' connections wait in the backlog until this
  // rank knows the secret.
  std::unique_ptr<MemberListener> listener;
  try {
    listener = std::make_unique<MemberListener>(bind);
  } catch (const Error& e) {
    throw RuntimeFailure(label + ": " + e.what());
  }

  // Rank 0 draws the job's secret and sets it before arriving (docs/DESIGN.md §10): whoever
  // can read the store is a member.
  membership::Secret secret{};
  if (options.rank == 0) {
    secret = membership::draw_secret();
    try {
      store.set(membership_secret_key(), membership::encode_secret(secret));
    } catch (...) {
      throw RuntimeFailure(label +
                           ": cannot publish the membership secret: " + current_exception_text());
    }
  }

  try {
    const std::string rank_text = std::to_string(options.rank);
    store.set(arrival_key(options.rank), std::vector<char>(rank_text.begin(), rank_text.end()));
  } catch (...) {
    throw RuntimeFailure(label + ": cannot announce rank " + std::to_string(options.rank) +
                         " (a stale or reused job directory, or two processes started as "
                         "this rank?): " +
                         current_exception_text());
  }
  await_arrivals(has_key, options, label);

  // From here a fresh deadline: a rank that dies or freezes between arriving and connecting
  // is named within it (pair_mesh.h).
  return connect_pair_mesh(store, has_key, device, *listener, options.rank == 0 ? &secret : nullptr,
                           options, label);
}

}  // namespace gloo_detail
}  // namespace rv
