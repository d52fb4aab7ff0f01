// libFuzzer target: the readers of the job directory's records (core/rendezvous/job_directory.h),
// through its one public entry, JobDirectory::open, over a real directory. The input is split
// at its first two NUL bytes into three records. A rank 1 of a world of 2 finds the first as
// the world record (the second as `ready`, the third as `closed` when not empty); a rank 0
// finds the first as rank 1's registration. Whatever the bytes, open returns or throws one of
// the library's errors (core/error.h), never another exception, a hang or a crash; the rank 1
// never joins a world its W does not match.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>

#include "core/error.h"
#include "core/rendezvous/job_directory.h"

namespace {

using std::chrono::milliseconds;

const std::string& scratch_root() {
  static const std::string root = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "rv-fuzz-job-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    return pattern;
  }();
  return root;
}

void write(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Runs `open`, accepting only the library's own errors.
template <typename Open>
void expect_only_library_errors(Open open) {
  try {
    open();
  } catch (const rv::Error&) {
  } catch (...) {
    std::abort();
  }
}

void as_rank_one(const std::string& job, std::string_view world, std::string_view ready,
                 std::string_view closed) {
  const std::string dir = scratch_root() + "/" + job;
  std::filesystem::create_directories(dir + "/" + rv::kGlooStoreFolder);
  write(dir + "/" + rv::kWorldRecordFile, world);
  if (!ready.empty()) write(dir + "/" + rv::kReadyFile, ready);
  if (!closed.empty()) write(dir + "/" + rv::kClosedFile, closed);
  expect_only_library_errors([&] {
    const rv::JobDirectory joined =
        rv::JobDirectory::open(scratch_root(), job, 1, 2, milliseconds(1));
    if (joined.world_size() != 2) std::abort();
  });
}

void as_rank_zero(const std::string& job, std::string_view registration) {
  const std::string dir = scratch_root() + "/" + job;
  // Rank 0 makes the directory itself; rank 1's registration is planted once the world
  // record shows it has.
  std::thread planter([&] {
    for (int tries = 0; tries < 2000; ++tries) {
      if (::access((dir + "/" + rv::kWorldRecordFile).c_str(), F_OK) == 0) {
        write(dir + "/rank-1", registration);
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  expect_only_library_errors(
      [&] { rv::JobDirectory::open(scratch_root(), job, 0, 2, milliseconds(200)); });
  planter.join();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static unsigned long iteration = 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string_view parts[3];
  for (int i = 0; i < 2; ++i) {
    const std::size_t nul = text.find('\0');
    parts[i] = text.substr(0, nul);
    text = nul == std::string_view::npos ? std::string_view() : text.substr(nul + 1);
  }
  parts[2] = text;
  const std::string job = "fuzz-" + std::to_string(iteration++);
  as_rank_one(job + "-r1", parts[0], parts[1], parts[2]);
  as_rank_zero(job + "-r0", parts[0]);
  std::error_code ignored;
  std::filesystem::remove_all(scratch_root() + "/" + job + "-r1", ignored);
  std::filesystem::remove_all(scratch_root() + "/" + job + "-r0", ignored);
  return 0;
}
