// `run --hostname auto` (the default): before a rank creates its Gloo device, the ranks agree
// on their bind addresses through the job directory they already share. Each rank publishes
// its place and candidate addresses (core/transport/gloo/host_interfaces.h) as
// <dir>/rank-<r>, waits for every rank's record within the timeout, and applies the one
// deterministic choice (core/transport/gloo/bind_address.h) to the records. Every rank reads
// the same records, so a world where some rank has no address the others can reach is refused
// by every rank alike, at once, rather than by its peers timing out waiting for it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/transport/gloo/bind_address.h"

namespace rv {

struct BindAddressAgreementOptions {
  std::string dir;  // shared by the world's ranks, fresh per launch: JobDirectory::file(...)
  std::uint32_t rank = 0, world = 1;
  std::chrono::milliseconds timeout{60000};
};

// The folder of the job directory the records go in.
inline constexpr const char* kBindAddressFolder = "bind-address";

// Publishes `mine` (whose rank must be options.rank), waits for every rank's record and
// returns the address this rank binds (dotted IPv4). Throws DeadlineExceeded naming the
// ranks that published nothing within options.timeout; InputError when this rank or another
// has no address every other place reaches (bind_address.h: naming that rank); RuntimeFailure
// for a record this tool did not write, or a filesystem error.
std::string agree_bind_address(const BindAddressAgreementOptions& options,
                               const BindCandidates& mine);

}  // namespace rv
