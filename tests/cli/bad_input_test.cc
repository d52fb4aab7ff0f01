// Bad input of every kind issue 2 lists gets exit 2 and one line on stderr that names the
// file or field — never a crash, a signal, or an attempt to allocate terabytes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cli/cli_support.h"
#include "tests/support/scratch_dir.h"

namespace rv::test {
namespace {

using ::testing::HasSubstr;

const std::string kGoodId = "contract=fixed-order,op=sum,w=3,n=10,dist=wide,seed=1,gen=1";

// Exit 2, no signal, exactly one line on stderr containing `names`.
void expect_bad_input(const std::vector<std::string>& args, const std::string& names) {
  std::string command = "reduce-verify";
  for (const std::string& a : args) command += " " + a.substr(0, 80);
  SCOPED_TRACE(command);
  const ProcessResult result = run_tool(args);
  ASSERT_TRUE(result.exited()) << summary(result);
  EXPECT_EQ(result.exit_code, 2) << summary(result);
  const std::vector<std::string> lines = split_lines(result.err);
  EXPECT_EQ(lines.size(), 1u) << "one line on stderr: " << result.err;
  EXPECT_THAT(result.err, HasSubstr(names));
  EXPECT_EQ(result.err.back(), '\n');
}

std::string four_floats(const ScratchDir& dir, const std::string& name, std::size_t count) {
  return dir.write(name, std::string(count * 4, '\0'));
}

TEST(BadInput, MissingInputFile) {
  ScratchDir dir;
  expect_bad_input({"digest", "--inputs", four_floats(dir, "a.f32", 4), dir.file("nope.f32")},
                   dir.file("nope.f32"));
}

TEST(BadInput, DirectoryAsInput) {
  ScratchDir dir;
  expect_bad_input({"digest", "--inputs", dir.path()}, dir.path() + ": not a regular file");
}

TEST(BadInput, UnreadableInputFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file";
  ScratchDir dir;
  const std::string path = four_floats(dir, "locked.f32", 4);
  ::chmod(path.c_str(), 0);
  expect_bad_input({"digest", "--inputs", path}, path);
}

TEST(BadInput, UnequalLengths) {
  ScratchDir dir;
  const std::string a = four_floats(dir, "a.f32", 4);
  const std::string b = four_floats(dir, "b.f32", 5);
  expect_bad_input({"digest", "--inputs", a, a, b}, b + ": 5 values, but " + a + " (rank 0) has 4");
}

TEST(BadInput, SizeNotAMultipleOfFour) {
  ScratchDir dir;
  const std::string odd = dir.write("odd.f32", std::string(7, 'x'));
  expect_bad_input({"digest", "--inputs", odd}, odd + ": size 7 bytes is not a multiple of 4");
  const std::string a = four_floats(dir, "a.f32", 2);
  expect_bad_input({"digest", "--inputs", a, odd}, odd);
}

// bf16/f16 files are 2 bytes a value: an odd size is named, with the dtype it was read as.
TEST(BadInput, HalfInputOfOddSize) {
  ScratchDir dir;
  const std::string odd = dir.write("odd.bf16", std::string(7, 'x'));
  for (const char* dtype : {"bf16", "f16"}) {
    expect_bad_input({"digest", "--dtype", dtype, "--inputs", odd},
                     odd + ": size 7 bytes is not a multiple of 2");
    expect_bad_input({"run", "--transport", "gloo", "--dtype", dtype, "--inputs", odd, odd},
                     odd + ": size 7 bytes is not a multiple of 2");
  }
  expect_bad_input({"digest", "--dtype", "f64", "--inputs", odd}, "'f64' is not f32, bf16 or f16");
}

// Asked for the library's sum alone, of a dtype the transport's library cannot sum (Gloo has
// no bfloat16): a named error and exit 2, nothing summed another way.
TEST(BadInput, LibrarySumOfADtypeTheTransportCannotSum) {
  const ProcessResult result = run_tool(
      {"run", "--transport", "gloo", "--contract", "library-sum", "--case",
       "contract=fixed-order,op=sum,dtype=bf16,w=2,n=10,dist=normal,seed=1,gen=1"});
  ASSERT_TRUE(result.exited()) << summary(result);
  EXPECT_EQ(result.exit_code, 2) << summary(result);
  EXPECT_THAT(result.err, HasSubstr("gloo has no library sum of bf16"));
}

TEST(BadInput, NoInputs) {
  expect_bad_input({"digest", "--inputs"}, "--inputs");
  expect_bad_input({"digest"}, "give exactly one of");
}

TEST(BadInput, HugeSparseInputIsRefusedBeforeReading) {
  // 2^31 values in a sparse file: more than any arena may have, refused from its size.
  ScratchDir dir;
  const std::string path = dir.file("huge.f32");
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{1} << 33), 0);
  ::close(fd);
  expect_bad_input({"digest", "--inputs", path}, "more than the maximum");
}

TEST(BadInput, MalformedCaseId) {
  expect_bad_input({"digest", "--case", "w=3,n=10"}, "'contract=…'");
  expect_bad_input({"digest", "--case", kGoodId + ",extra=1"}, "after gen");
  expect_bad_input(
      {"digest", "--case", "contract=fixed-order,op=sum,w=03,n=10,dist=wide,seed=1,gen=1"},
      "'w' has a leading zero");
  expect_bad_input(
      {"digest", "--case", "contract=fixed-order,op=max,w=3,n=10,dist=wide,seed=1,gen=1"},
      "op 'max'");
  expect_bad_input(
      {"digest", "--case", "contract=fixed-order,op=sum,w=3,n=10,dist=wide,seed=1,gen=7"},
      "gen = 7");
  expect_bad_input({"digest", "--case", ""}, "case id");
}

TEST(BadInput, OutOfRangeAndAbsurdCaseIds) {
  expect_bad_input(
      {"digest", "--case", "contract=fixed-order,op=sum,w=0,n=10,dist=wide,seed=1,gen=1"}, "w = 0");
  expect_bad_input(
      {"digest", "--case", "contract=fixed-order,op=sum,w=5000,n=10,dist=wide,seed=1,gen=1"},
      "'w' = 5000");
  expect_bad_input({"digest", "--case",
                    "contract=fixed-order,op=sum,w=1000000,n=99999999999,dist=wide,seed=1,gen=1"},
                   "'w' = 1000000");
  expect_bad_input(
      {"digest", "--case", "contract=fixed-order,op=sum,w=1,n=99999999999,dist=wide,seed=1,gen=1"},
      "'n' = 99999999999");
  expect_bad_input({"digest", "--case",
                    "contract=fixed-order,op=sum,w=4096,n=1073741824,dist=wide,seed=1,gen=1"},
                   "w × n");
  expect_bad_input({"digest", "--world", "1000000", "--count", "1"}, "--world");
  expect_bad_input({"digest", "--world", "2", "--count", "99999999999"}, "--count");
}

TEST(BadInput, LibrarySumHasNoDigest) {
  expect_bad_input(
      {"digest", "--case", "contract=library-sum,op=sum,w=3,n=10,dist=wide,seed=1,gen=1"},
      "library-sum");
}

TEST(BadInput, UsageErrors) {
  expect_bad_input({"no-such-subcommand"}, "reduce-verify: error:");
  expect_bad_input({"digest", "--op", "max", "--case", kGoodId}, "--op");
  expect_bad_input({"check"}, "files");
  expect_bad_input({"digest", "--case", kGoodId, "--no-such-option"}, "--no-such-option");
}

TEST(BadInput, DumpIntoAMissingDirectory) {
  ScratchDir dir;
  const std::string dump = dir.file("no/such/dir/out.f32");
  expect_bad_input({"digest", "--case", kGoodId, "--dump", dump}, dump);
  const std::string a = four_floats(dir, "a.f32", 3);
  expect_bad_input({"digest", "--dump", dump, "--inputs", a}, dump);
}

// Garbage golden files: exit 2, the file named, and nothing verified.
void expect_bad_golden(const std::string& path) {
  SCOPED_TRACE("check " + path);
  const ProcessResult result = run_tool({"check", path});
  ASSERT_TRUE(result.exited()) << summary(result);
  EXPECT_EQ(result.exit_code, 2) << summary(result);
  EXPECT_THAT(result.err, HasSubstr(path));
  EXPECT_THAT(result.out, HasSubstr("0 passed, 0 failed"));
}

TEST(BadInput, GarbageGoldenFiles) {
  ScratchDir dir;
  std::string noise;
  std::uint32_t x = 88172645u;
  for (int i = 0; i < 100000; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    noise += static_cast<char>(x & 0xFF);
  }
  expect_bad_golden(dir.write("random.xxh128", noise));
  expect_bad_golden(dir.write("empty.xxh128", ""));
  expect_bad_golden(dir.write("comments.xxh128", "# only\n# comments\n\n"));
  expect_bad_golden(dir.write("nul.xxh128", std::string(4096, '\0')));
  expect_bad_golden(dir.write("long.xxh128", std::string(1 << 20, 'a')));
  expect_bad_golden(dir.file("missing.xxh128"));
  expect_bad_golden(dir.path());
}

TEST(BadInput, EmptyAndCommentOnlyGoldenFilesSayWhy) {
  ScratchDir dir;
  for (const std::string& text : {std::string(), std::string("# only a comment\n")}) {
    const std::string path = dir.write("f.xxh128", text);
    const ProcessResult result = run_tool({"check", path});
    EXPECT_EQ(result.exit_code, 2) << summary(result);
    EXPECT_EQ(split_lines(result.err).size(), 1u) << result.err;
    EXPECT_THAT(result.err, HasSubstr(path + ": no properly formatted golden lines found"));
  }
}

}  // namespace
}  // namespace rv::test
