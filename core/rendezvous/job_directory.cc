#include "core/rendezvous/job_directory.h"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "core/deadline.h"
#include "core/error.h"
#include "core/rendezvous/atomic_file.h"
#include "core/rendezvous/launcher_env.h"
#include "core/rendezvous/private_directory.h"

namespace rv {
namespace {

constexpr const char* kRecordHeader = "reduce-verify job directory 1";

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> buffer(bytes);
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::getrandom(buffer.data() + done, bytes - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw RuntimeFailure(detail::concat("getrandom: ", std::strerror(errno)));
    done += static_cast<std::size_t>(n);
  }
  std::string hex;
  for (unsigned char b : buffer) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", b);
    hex += two;
  }
  return hex;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// The value of "key value" in a record of such lines; nullopt when absent.
std::optional<std::string> field(const std::string& record, const std::string& key) {
  std::istringstream lines(record);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == ' ') {
      return line.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string stale_hint(const std::string& job_id) {
  return detail::concat("a stale or concurrent run with job id ", job_id,
                        "; use a fresh job id or remove it");
}

struct WorldRecord {
  std::uint32_t world = 0;
  std::string nonce;
};

WorldRecord parse_world_record(const std::string& path, const std::string& text) {
  WorldRecord record;
  const auto world = field(text, "world");
  const auto nonce = field(text, "nonce");
  bool ok = first_line(text) == kRecordHeader && world && nonce && nonce->size() == 32;
  if (ok) {
    try {
      const unsigned long n = std::stoul(*world);
      ok = n >= 1 && n <= 0xFFFFFFFFul;
      record.world = static_cast<std::uint32_t>(n);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok) {
    throw RuntimeFailure(detail::concat("the world record ", path,
                                        " is not one this tool wrote (first line \"",
                                        first_line(text), "\")"));
  }
  record.nonce = *nonce;
  return record;
}

// A root every user may write and that is not sticky (unlike /tmp) lets any of them rename
// a job directory away and put one of theirs in its place.
void refuse_replaceable_root(const std::string& root) {
  struct stat info {};
  if (::stat(root.c_str(), &info) == 0 && (info.st_mode & S_IWOTH) != 0 &&
      (info.st_mode & S_ISVTX) == 0) {
    throw InputError(detail::concat("the rendezvous directory ", root, " (mode ",
                                    mode_text(static_cast<unsigned>(info.st_mode)),
                                    ") is writable by every user and not sticky: another user "
                                    "could replace the job directory; use a directory of "
                                    "your own or a sticky one such as /tmp"));
  }
}

}  // namespace

std::string fresh_job_id() { return "rv-" + random_hex(8); }

JobDirectory::JobDirectory(std::string path, std::string job_id, std::uint32_t rank,
                           std::uint32_t world, std::string nonce)
    : path_(std::move(path)),
      job_id_(std::move(job_id)),
      rank_(rank),
      world_(world),
      nonce_(std::move(nonce)) {}

std::string JobDirectory::file(const std::string& name) const { return path_ + "/" + name; }

std::string JobDirectory::gloo_store_dir() const { return file(kGlooStoreFolder); }

bool JobDirectory::is_closed() const { return read_small_file(file(kClosedFile)).has_value(); }

void JobDirectory::close() {
  if (rank_ != 0) return;
  publish_file_exclusively(file(kClosedFile), "finished\n");
}

JobDirectory JobDirectory::open(const std::string& root, const std::string& job_id,
                                std::uint32_t rank, std::uint32_t world,
                                std::chrono::milliseconds timeout) {
  validate_job_id(job_id);
  RV_ENFORCE_GE(InputError, world, 1u, "a world has at least one rank");
  RV_ENFORCE_LT(InputError, rank, world, "the rank must be below the world size");
  RV_ENFORCE_GE(InputError, timeout.count(), 1, "the rendezvous needs a positive timeout");
  if (root.empty()) throw InputError("the rendezvous directory is empty");
  const std::string path = root + "/" + job_id;
  const auto in = [&](const char* name) { return path + "/" + name; };
  const Deadline deadline(timeout);
  Backoff backoff;

  if (rank == 0) {
    make_directories(root);
    refuse_replaceable_root(root);
    if (!make_directory_exclusively(path)) {
      throw InputError(
          detail::concat("job directory ", path, " already exists: ", stale_hint(job_id)));
    }
    require_private_directory(path, "the job directory");
    const std::string nonce = random_hex(16);
    make_directories(in(kGlooStoreFolder));
    write_file_atomically(in(kWorldRecordFile), detail::concat(kRecordHeader, "\nworld ", world,
                                                               "\nnonce ", nonce, "\n"));
    // A rank 0 that gives up marks the directory, so ranks still on their way fail at once
    // instead of waiting out their own deadlines.
    const auto abandon = [&](const std::string& why) {
      try {
        publish_file_exclusively(in(kClosedFile), "abandoned: " + why + "\n");
      } catch (const Error&) {
      }
    };
    std::vector<std::uint32_t> missing;
    for (std::uint32_t r = 1; r < world; ++r) missing.push_back(r);
    for (;;) {
      std::vector<std::uint32_t> still;
      for (std::uint32_t r : missing) {
        const std::string rank_file = path + "/rank-" + std::to_string(r);
        const auto registration = read_small_file(rank_file);
        if (!registration) {
          still.push_back(r);
          continue;
        }
        if (field(*registration, "nonce") != nonce) {
          const std::string why = detail::concat(rank_file, " was written for another launch");
          abandon(why);
          throw RuntimeFailure(
              detail::concat("job directory ", path, ": ", why, " (", stale_hint(job_id), ")"));
        }
      }
      missing = std::move(still);
      if (missing.empty()) break;
      if (deadline.passed()) {
        const std::string why =
            detail::concat(ranks_text(missing), " did not join within ", format_duration(timeout));
        abandon(why);
        throw DeadlineExceeded(detail::concat("job directory ", path, ": ", why));
      }
      backoff.sleep(deadline);
    }
    write_file_atomically(in(kReadyFile), "nonce " + nonce + "\n");
    return JobDirectory(path, job_id, rank, world, nonce);
  }

  // Rank r > 0: the world record first.
  std::optional<std::string> record_text;
  while (!(record_text = read_small_file(in(kWorldRecordFile)))) {
    if (deadline.passed()) {
      throw DeadlineExceeded(
          detail::concat("job directory ", path, ": rank ", rank,
                         " found no world record from rank 0 after ", format_duration(timeout),
                         " (is rank 0 running, with the same rendezvous directory and "
                         "job id?)"));
    }
    backoff.sleep(deadline);
  }
  // Only a directory of this user's alone can hold rank 0's records: one another user made
  // (or can write) is refused before a byte of it is trusted (docs/DESIGN.md §10).
  require_private_directory(path, "the job directory");
  const WorldRecord record = parse_world_record(in(kWorldRecordFile), *record_text);
  if (record.world != world) {
    throw InputError(detail::concat("job directory ", path, " belongs to a world of ", record.world,
                                    " ranks, but rank ", rank, " was started in a world of ", world,
                                    ": ", stale_hint(job_id)));
  }
  if (const auto closed = read_small_file(in(kClosedFile))) {
    throw InputError(detail::concat("job directory ", path, " is closed (", first_line(*closed),
                                    "): ", stale_hint(job_id)));
  }
  const std::string rank_file = path + "/rank-" + std::to_string(rank);
  const bool registered = publish_file_exclusively(
      rank_file,
      detail::concat("nonce ", record.nonce, "\npid ", ::getpid(), "\nhost ", host_name(), "\n"));
  if (!registered) {
    throw InputError(detail::concat("job directory ", path, ": rank ", rank,
                                    " is already registered there (", rank_file,
                                    "): ", stale_hint(job_id)));
  }

  // Then rank 0's confirmation that the whole world, this rank included, has registered.
  for (;;) {
    if (const auto ready = read_small_file(in(kReadyFile))) {
      if (field(*ready, "nonce") != record.nonce) {
        throw RuntimeFailure(detail::concat("job directory ", path, " changed under rank ", rank,
                                            " (its ready marker is for another launch)"));
      }
      return JobDirectory(path, job_id, rank, world, record.nonce);
    }
    if (const auto closed = read_small_file(in(kClosedFile))) {
      throw RuntimeFailure(
          detail::concat("job directory ", path, ": rank 0 gave up (", first_line(*closed), ")"));
    }
    if (deadline.passed()) {
      throw DeadlineExceeded(detail::concat("job directory ", path, ": rank ", rank,
                                            " registered, but rank 0 did not confirm the "
                                            "world within ",
                                            format_duration(timeout),
                                            " (rank 0 died, or the directory is left "
                                            "from a crashed run with job id ",
                                            job_id, ")"));
    }
    backoff.sleep(deadline);
  }
}

}  // namespace rv
