#include "core/rendezvous/file_barrier.h"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "core/deadline.h"
#include "core/error.h"
#include "core/rendezvous/atomic_file.h"

namespace rv {
namespace {

bool exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

std::string generation_dir(const std::string& dir, std::uint64_t generation) {
  return detail::concat(dir, "/gen-", generation);
}

}  // namespace

FileBarrier::FileBarrier(std::string dir, std::uint32_t rank, std::uint32_t world,
                         std::chrono::milliseconds timeout)
    : dir_(std::move(dir)), rank_(rank), world_(world), timeout_(timeout) {
  RV_ENFORCE_GE(InputError, world_, 1u, "a barrier needs a world of at least one rank");
  RV_ENFORCE_LT(InputError, rank_, world_, "the barrier's rank must be below the world size");
  RV_ENFORCE_GE(InputError, timeout_.count(), 1, "the barrier needs a positive timeout");
  make_directories(dir_);
}

void FileBarrier::wait() {
  if (broken_) {
    throw RuntimeFailure(detail::concat("barrier in ", dir_, " is unusable: generation ",
                                        generation_ - 1, " timed out"));
  }
  const std::uint64_t generation = generation_++;
  const std::string gen_dir = generation_dir(dir_, generation);
  make_directories(gen_dir);
  write_file_atomically(detail::concat(gen_dir, "/rank-", rank_), "arrived\n");

  std::vector<std::uint32_t> missing;
  for (std::uint32_t r = 0; r < world_; ++r) missing.push_back(r);
  const Deadline deadline(timeout_);
  Backoff backoff;
  for (;;) {
    // Markers never disappear while anyone can still be waiting on their generation, so a
    // rank seen once stays counted.
    std::vector<std::uint32_t> still;
    for (std::uint32_t r : missing) {
      if (!exists(detail::concat(gen_dir, "/rank-", r))) still.push_back(r);
    }
    missing = std::move(still);
    if (missing.empty()) break;
    if (deadline.passed()) {
      broken_ = true;
      throw DeadlineExceeded(detail::concat("barrier generation ", generation, " in ", dir_, ": ",
                                            ranks_text(missing), " missing after ",
                                            format_duration(timeout_)));
    }
    backoff.sleep(deadline);
  }

  // Keep at most two generations on disk. Once generation g is complete, every rank has
  // left g-1 (a rank publishes its g marker only after its g-1 wait returned), so nobody
  // can still look at g-2. Best effort: a failure leaks a directory, never blocks.
  if (rank_ == 0 && generation >= 2) {
    std::error_code ignored;
    std::filesystem::remove_all(generation_dir(dir_, generation - 2), ignored);
  }
}

}  // namespace rv
