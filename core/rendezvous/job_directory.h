// The job directory: root/job_id, one per launch, shared by every rank of the world (a
// local folder for a self-spawned world, a shared filesystem across nodes). The Gloo store,
// the file barrier and the ranks' result files live in it.
//
// The protocol, and why a stale or reused directory can never let a world start:
//   1. Rank 0 creates root/job_id with mkdir, which fails if the name exists: a directory
//      left by an earlier or crashed run (or a concurrent one) with the same id is refused
//      at once. So every directory a rank 0 works in is one it created itself.
//   2. Rank 0 publishes the world record (`world`: W and a random 128-bit launch nonce)
//      atomically, after creating the Gloo store folder.
//   3. Rank r > 0 waits for the record, checks W against its own, refuses a `closed`
//      directory, and registers by creating `rank-<r>` (holding the nonce) with link(2),
//      which never replaces an existing file: if rank-<r> exists, another process already
//      registered as r (a stale or concurrent world), and this rank refuses at once.
//   4. Rank 0 waits until all W-1 registrations exist and carry its nonce, then publishes
//      `ready` (with the nonce). Rank r > 0 returns from open only after it sees `ready`
//      with the nonce it registered under.
// Safety: `ready` with nonce N exists only if the live rank 0 that drew N saw all W
// registrations for N. A rank r that registered (step 3 succeeded) created rank-<r> itself,
// so rank-<r> did not exist before, so `ready` did not exist before (it needs rank-<r>), so
// the rank 0 that later published `ready` counted this very rank r. Hence every rank that
// returns from open is in one world with a rank 0 that was alive after the last of them
// registered, and no rank passes with a missing peer. A stale directory whose world
// completed has all rank-<r> files: every newcomer refuses at once. One whose rank 0 died
// before `ready` never gets a `ready`: newcomers wait out their deadline (or see `closed`,
// which a rank 0 that timed out writes) and fail with a DeadlineExceeded.
// What it cannot tell apart: two launches that run at the same time with the same job id are
// one launch as far as any file can say. The later rank 0 fails at once, and for every rank r
// whichever of the two rank-r processes links second fails at once, so the later launch can
// never finish; a rank of it that won its link joins the earlier launch's world (where the
// ranks' agreement on what to run still checks the work) until its launcher stops it. Hence:
// one job id per launch (the supervisor draws a fresh one; launchers' job ids are per launch).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rv {

class JobDirectory {
 public:
  // Runs the protocol above for this rank; returns once the whole world has registered
  // (open is itself a rendezvous of all W ranks). root is created if missing (rank 0).
  // Throws InputError for an invalid job id, a directory that exists (rank 0), a slot that
  // is taken or a world size that differs (rank r > 0), a closed directory; DeadlineExceeded
  // naming the missing ranks (rank 0) or the missing record / confirmation (rank r > 0) when
  // `timeout` passes; RuntimeFailure for filesystem errors.
  static JobDirectory open(const std::string& root, const std::string& job_id, std::uint32_t rank,
                           std::uint32_t world, std::chrono::milliseconds timeout);

  const std::string& path() const { return path_; }
  const std::string& job_id() const { return job_id_; }
  std::uint32_t rank() const { return rank_; }
  std::uint32_t world_size() const { return world_; }
  // The folder for Gloo's FileStore (created by rank 0 before the world record).
  std::string gloo_store_dir() const;
  // path()/name
  std::string file(const std::string& name) const;
  // 32 lowercase hex digits, drawn by rank 0, the same on every rank.
  const std::string& nonce() const { return nonce_; }

  // Rank 0: marks the directory closed ("finished"), so no process can join it later; a
  // no-op on other ranks and when already closed. Ranks that joined are not affected.
  void close();
  bool is_closed() const;

 private:
  JobDirectory(std::string path, std::string job_id, std::uint32_t rank, std::uint32_t world,
               std::string nonce);

  std::string path_, job_id_;
  std::uint32_t rank_ = 0, world_ = 1;
  std::string nonce_;
};

// A job id no other launch has: "rv-<hex of 64 random bits>", for a supervisor that
// self-spawns a world and was given no id.
std::string fresh_job_id();

// The files of the protocol, for tests and for tools that look into a job directory.
inline constexpr const char* kWorldRecordFile = "world";
inline constexpr const char* kReadyFile = "ready";
inline constexpr const char* kClosedFile = "closed";
inline constexpr const char* kGlooStoreFolder = "gloo-store";

}  // namespace rv
