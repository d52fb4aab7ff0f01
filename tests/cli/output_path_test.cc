// Outputs (`run --report`/`--junit`, `digest --dump`, `golden -o`) replace only regular files:
// a FIFO or a character device is written in place and stays what it was, a symlink is
// followed (its target replaced, the link kept), a directory is refused by name, and every
// output path is checked before the run, so an unwritable one costs no run (exit 2). A disk
// that fills while the output is written is a runtime failure (exit 3), never bad input.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "tests/cli/cli_support.h"
#include "tests/support/scratch_dir.h"

namespace rv::test {
namespace {

// Small enough to be instant, large enough that its dump is 16 kB.
const std::string kCase = "contract=fixed-order,op=sum,w=2,n=4096,dist=normal,seed=3,gen=1";
const std::string kWorldOneCase = "contract=fixed-order,op=sum,w=1,n=100,dist=normal,seed=3,gen=1";

mode_t type_of(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return info.st_mode & S_IFMT;
}

TEST(OutputPath, FifoIsWrittenInPlace) {
  ScratchDir dir;
  const std::string fifo = dir.file("dump.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reader a shell pipeline would be, opened first so the writer never blocks; the dump
  // (16 kB) fits in the pipe's buffer.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  const ProcessResult result = run_tool({"digest", "--case", kCase, "--dump", fifo});
  std::string got;
  char buffer[4096];
  for (ssize_t n; (n = ::read(reader, buffer, sizeof buffer)) > 0;) {
    got.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(reader);
  ASSERT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_EQ(got.size(), 4096u * 4) << "the reduced arena did not go through the FIFO";
  EXPECT_EQ(type_of(fifo), S_IFIFO) << "the FIFO was replaced by a file";
}

// A reader that leaves early (`| head -c 10`): the writer gets EPIPE, a runtime failure that
// names the path, not death by SIGPIPE.
TEST(OutputPath, FifoWhoseReaderLeavesIsARuntimeFailureNotASignal) {
  ScratchDir dir;
  const std::string fifo = dir.file("dump.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);  // blocks until the tool opens it
    char ten[10];
    [[maybe_unused]] const ssize_t n = ::read(fd, ten, sizeof ten);
    ::close(fd);
  });
  // 4 MB: far more than a pipe holds, so the writer is still writing when the reader leaves.
  const ProcessResult result = run_tool(
      {"digest", "--case", "contract=fixed-order,op=sum,w=2,n=1000000,dist=normal,seed=3,gen=1",
       "--dump", fifo});
  reader.join();
  ASSERT_TRUE(result.exited()) << summary(result);
  EXPECT_EQ(result.exit_code, 3) << summary(result);
  EXPECT_NE(result.err.find(fifo + ": write failed: Broken pipe"), std::string::npos) << result.err;
}

TEST(OutputPath, CharacterDeviceIsWrittenInPlaceNeverReplaced) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod of a character device needs root";
  ScratchDir dir;
  const std::string null = dir.file("null");  // a /dev/null of our own
  ASSERT_EQ(::mknod(null.c_str(), S_IFCHR | 0666, ::makedev(1, 3)), 0) << std::strerror(errno);
  ProcessResult result = run_tool({"digest", "--case", kCase, "--dump", null});
  EXPECT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_EQ(type_of(null), S_IFCHR) << "digest --dump replaced the device";
  result = run_tool(
      {"run", "--transport", "gloo", "--case", kWorldOneCase, "--report", null, "--junit", null});
  EXPECT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_EQ(type_of(null), S_IFCHR) << "run --report replaced the device";
}

TEST(OutputPath, SymlinkIsFollowedAndKept) {
  ScratchDir dir;
  ASSERT_EQ(::mkdir(dir.file("real").c_str(), 0755), 0);
  const std::string target = dir.write("real/old.f32", "old");
  const std::string link = dir.file("link.f32");
  ASSERT_EQ(::symlink("real/old.f32", link.c_str()), 0);
  ProcessResult result = run_tool({"digest", "--case", kCase, "--dump", link});
  ASSERT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_EQ(type_of(link), S_IFLNK) << "the link was replaced by a file";
  EXPECT_EQ(ScratchDir::read(target).size(), 4096u * 4) << "the link's target was not written";
  // A dangling link: the file it names is created, the link stays.
  const std::string dangling = dir.file("dangling.f32");
  ASSERT_EQ(::symlink("real/new.f32", dangling.c_str()), 0);
  result = run_tool({"digest", "--case", kCase, "--dump", dangling});
  ASSERT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_EQ(type_of(dangling), S_IFLNK);
  EXPECT_EQ(ScratchDir::read(dir.file("real/new.f32")).size(), 4096u * 4);
}

TEST(OutputPath, DirectoryIsRefusedByName) {
  ScratchDir dir;
  const ProcessResult result = run_tool({"digest", "--case", kCase, "--dump", dir.path()});
  EXPECT_EQ(result.exit_code, 2) << summary(result);
  EXPECT_NE(result.err.find("--dump " + dir.path() + ": is a directory"), std::string::npos)
      << result.err;
}

// A report that cannot be written is found before a single rank starts: at once, exit 2,
// naming the option and the path, and no result line printed.
TEST(OutputPath, UnwritableReportFailsBeforeTheRun) {
  ScratchDir dir;
  const std::string file = dir.write("plain", "x");
  for (const std::string option : {"--report", "--junit"}) {
    for (const std::string& path : {dir.file("missing/r.json"), file + "/r.json"}) {
      SCOPED_TRACE(option + " " + path);
      const ProcessResult result = run_tool(
          {"run", "--transport", "gloo", "--case", kWorldOneCase, option, path, "--timeout", "30"});
      EXPECT_EQ(result.exit_code, 2) << summary(result);
      EXPECT_NE(result.err.find(option + " " + path + ": "), std::string::npos) << result.err;
      EXPECT_EQ(result.out.find("passed"), std::string::npos) << "the run ran: " << result.out;
    }
  }
}

// A tmpfs of 64 kB, filled: the output is created (a name costs no block) but its bytes do
// not fit. That is the machine's failure, exit 3, and the message names the path.
TEST(OutputPath, FullDiskIsARuntimeFailureNamingThePath) {
  ScratchDir dir;
  const std::string mount_point = dir.file("full");
  ASSERT_EQ(::mkdir(mount_point.c_str(), 0755), 0);
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=64k") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << "; needs root)";
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mount_point};
  // Fill it.
  const int fd = ::open((mount_point + "/filler").c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  const std::string block(4096, 'x');
  while (::write(fd, block.data(), block.size()) > 0) {
  }
  ::close(fd);
  const std::string dump = mount_point + "/dump.f32";
  ProcessResult result = run_tool({"digest", "--case", kCase, "--dump", dump});
  EXPECT_EQ(result.exit_code, 3) << summary(result);
  EXPECT_NE(result.err.find(dump + ": write failed: No space left on device"), std::string::npos)
      << result.err;
  EXPECT_NE(::access(dump.c_str(), F_OK), 0) << "a partial dump was left behind";
  const std::string report = mount_point + "/r.json";
  result = run_tool({"run", "--transport", "gloo", "--case", kWorldOneCase, "--report", report});
  EXPECT_EQ(result.exit_code, 3) << summary(result);
  EXPECT_NE(result.err.find(report + ": write failed: No space left on device"), std::string::npos)
      << result.err;
}

}  // namespace
}  // namespace rv::test
