// What another user of the machine can do to a world's rendezvous (docs/DESIGN.md §10), with
// a child process that drops to the user `nobody` (so only as root; skipped otherwise):
//   - it cannot create a file in a job directory or a Gloo store (0700), whatever the umask;
//   - a record it did write (into a store whose mode once let it in) is refused by name,
//     never read as a peer's address;
//   - a job directory it made ahead of the world, with a world record of its own, is refused
//     by a rank that would otherwise have registered in it and joined its world.
// And, for any user: under umask 000 every file of the job directory and the store is 0600
// and every directory 0700.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rendezvous/file_barrier.h"
#include "core/rendezvous/job_directory.h"
#include "core/transport/gloo/gloo_rendezvous.h"
#include "core/transport/gloo/gloo_transport.h"
#include "core/transport/gloo/pair_mesh.h"
#include "core/transport/gloo/private_file_store.h"
#include "tests/support/scratch_dir.h"

namespace rv::test {
namespace {

using namespace std::chrono_literals;

struct Nobody {
  uid_t uid = 0;
  gid_t gid = 0;
};

// The user `nobody`, when this process may become it (it runs as root).
bool find_nobody(Nobody* nobody) {
  if (::geteuid() != 0) return false;
  const passwd* entry = ::getpwnam("nobody");
  if (entry == nullptr) return false;
  nobody->uid = entry->pw_uid;
  nobody->gid = entry->pw_gid;
  return true;
}

#define REQUIRE_NOBODY(nobody)                                                           \
  Nobody nobody;                                                                         \
  if (!find_nobody(&nobody)) {                                                           \
    GTEST_SKIP() << "needs root, to run a child as the user nobody (uid " << ::geteuid() \
                 << " here)";                                                            \
  }

// Runs `body` in a forked child as `nobody`; its result is the child's exit status (0 ok).
int as_nobody(const Nobody& nobody, const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(nobody.gid) != 0 || ::setuid(nobody.uid) != 0) {
      ::_exit(100);
    }
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

int write_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return errno;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok ? 0 : EIO;
}

unsigned mode_of(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

TEST(ForgedRecord, AnotherUserCannotWriteIntoAJobDirectoryOrItsStore) {
  REQUIRE_NOBODY(nobody);
  ScratchDir root;
  JobDirectory job = JobDirectory::open(root.path(), "job", 0, 1, 5s);
  ::chmod(root.path().c_str(), 0755);  // others may reach the job directory, not enter it
  const std::string store_file = job.gloo_store_dir() + "/forged";
  const std::string registration = job.file("rank-1");
  EXPECT_EQ(as_nobody(nobody, [&] { return write_file(store_file, "x"); }), EACCES);
  EXPECT_EQ(as_nobody(nobody, [&] { return write_file(registration, "nonce x\n"); }), EACCES);
  EXPECT_EQ(as_nobody(nobody, [&] { return ::access(job.path().c_str(), R_OK) == 0 ? 0 : errno; }),
            EACCES);
}

// A store whose mode let another user in (a run under umask 000 made it 0777): the records
// `nobody` left there announce a rank 1 that listens on its own port. Rank 0 refuses them
// by name instead of connecting to it.
TEST(ForgedRecord, ARecordOfAnotherUserIsRefusedByName) {
  REQUIRE_NOBODY(nobody);
  ScratchDir root;
  const std::string store_dir = root.file("store");
  ASSERT_EQ(::mkdir(store_dir.c_str(), 0700), 0);
  ::chmod(root.path().c_str(), 0755);
  const gloo_detail::PrivateFileStore store(store_dir);
  gloo_detail::MeshRecord record;
  record.rank = 1;
  record.world = 2;
  record.bound = "[127.0.0.1]:9";
  record.host = "forger";
  record.network = gloo_detail::network_identity();
  record.listen_ip = "127.0.0.1";
  record.listen_port = "9";
  const std::vector<char> bytes = gloo_detail::encode_mesh_record(record);
  const std::string record_path = store.path_of(gloo_detail::mesh_record_key(1));
  const std::string arrival_path = store.path_of(gloo_detail::arrival_key(1));
  ASSERT_EQ(::chmod(store_dir.c_str(), 0777), 0);
  EXPECT_EQ(as_nobody(nobody,
                      [&] {
                        return write_file(arrival_path, "1") ||
                               write_file(record_path, std::string(bytes.begin(), bytes.end()));
                      }),
            0);
  ASSERT_EQ(::chmod(store_dir.c_str(), 0700), 0);

  GlooConnectOptions options;
  options.store_dir = store_dir;
  options.rank = 0;
  options.world = 2;
  options.timeout = 3s;
  try {
    connect_gloo(options);
    FAIL() << "rank 0 took another user's records";
  } catch (const DeadlineExceeded& e) {
    FAIL() << "waited instead of refusing: " << e.what();
  } catch (const RuntimeFailure& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("belongs to uid " + std::to_string(nobody.uid)), std::string::npos) << text;
    EXPECT_NE(text.find("forged by another user?"), std::string::npos) << text;
  }
}

// `nobody` made the job directory first, in a shared sticky root, with a world record of its
// own (its own nonce, so it could confirm the world itself). Rank 1 used to register there
// and wait for that world; now it refuses the directory by name.
TEST(ForgedRecord, AJobDirectoryOfAnotherUserIsRefused) {
  REQUIRE_NOBODY(nobody);
  ScratchDir scratch;
  const std::string shared = scratch.file("shared");
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);  // like /tmp
  ::chmod(scratch.path().c_str(), 0755);
  const std::string job = shared + "/job";
  EXPECT_EQ(as_nobody(nobody,
                      [&] {
                        if (::mkdir(job.c_str(), 0777) != 0 || ::chmod(job.c_str(), 0777) != 0) {
                          return errno;
                        }
                        return write_file(job + "/world",
                                          "reduce-verify job directory 1\nworld 2\nnonce "
                                          "0123456789abcdef0123456789abcdef\n");
                      }),
            0);
  try {
    JobDirectory::open(shared, "job", 1, 2, 3s);
    FAIL() << "rank 1 joined another user's job directory";
  } catch (const DeadlineExceeded& e) {
    FAIL() << "registered and waited: " << e.what();
  } catch (const RuntimeFailure& e) {
    const std::string text = e.what();
    EXPECT_NE(
        text.find("the job directory " + job + " belongs to uid " + std::to_string(nobody.uid)),
        std::string::npos)
        << text;
  }
  struct stat info {};
  EXPECT_NE(::lstat((job + "/rank-1").c_str(), &info), 0) << "rank 1 registered there";
}

// The umask takes bits away from a mode, never adds them, but 000 takes none: the job
// directory used to be 0777 and its files 0666.
TEST(PrivateModes, UnderUmaskZeroEveryFileIs0600AndEveryDirectory0700) {
  ScratchDir root;
  const mode_t old = ::umask(0);
  {
    JobDirectory job = JobDirectory::open(root.file("rendezvous"), "job", 0, 1, 5s);
    FileBarrier barrier(job.file("barrier"), 0, 1, 5s);
    barrier.wait();
    gloo_detail::PrivateFileStore store(job.gloo_store_dir());
    store.set("reduce-verify/key", {'x'});
    job.close();
    EXPECT_EQ(mode_of(root.file("rendezvous")), 0700u);
    EXPECT_EQ(mode_of(job.path()), 0700u);
    EXPECT_EQ(mode_of(job.file("world")), 0600u);
    EXPECT_EQ(mode_of(job.file("ready")), 0600u);
    EXPECT_EQ(mode_of(job.file("closed")), 0600u);
    EXPECT_EQ(mode_of(job.gloo_store_dir()), 0700u);
    EXPECT_EQ(mode_of(store.path_of("reduce-verify/key")), 0600u);
    EXPECT_EQ(mode_of(job.file("barrier")), 0700u);
    EXPECT_EQ(mode_of(job.file("barrier/gen-0")), 0700u);
    EXPECT_EQ(mode_of(job.file("barrier/gen-0/rank-0")), 0600u);
  }
  ::umask(old);
}

// A store directory others can enter is refused before anything is read from it.
TEST(PrivateModes, AStoreOthersCanEnterIsRefused) {
  ScratchDir root;
  const std::string store_dir = root.file("store");
  ASSERT_EQ(::mkdir(store_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(store_dir.c_str(), 0755), 0);
  GlooConnectOptions options;
  options.store_dir = store_dir;
  options.timeout = 2s;
  try {
    connect_gloo(options);
    FAIL() << "used a store others can read";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("with mode 0755: it must be this user's"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rv::test
