// The seed's file barrier with generations: a rank arrives at generation g by publishing
// dir/gen-<g>/rank-<r> (written beside, then renamed into place: it appears whole), and
// leaves when all W markers of g exist. Rename and directory lookups are the only
// filesystem operations relied on, so it works wherever the job directory lives.
//
// It trusts its directory to be fresh: markers left by another world would count. That is
// the job directory's promise (job_directory.h: a world only ever runs in a directory it
// created itself), so the barrier lives at JobDirectory::file("barrier").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rv {

class FileBarrier {
 public:
  // Creates `dir` if needed. Every rank of the world constructs one over the same dir.
  FileBarrier(std::string dir, std::uint32_t rank, std::uint32_t world,
              std::chrono::milliseconds timeout);

  // Waits until all W ranks have reached this generation's wait; each call is the next
  // generation. Throws DeadlineExceeded naming the missing ranks when the timeout passes
  // ("barrier generation 3 in DIR: ranks 2, 5 missing after 10 s"); the barrier is then
  // unusable, like a transport after a failure.
  void wait();

  std::uint64_t generation() const { return generation_; }  // the next wait's generation

 private:
  std::string dir_;
  std::uint32_t rank_, world_;
  std::chrono::milliseconds timeout_;
  std::uint64_t generation_ = 0;
  bool broken_ = false;
};

}  // namespace rv
