// Input a careless or hostile user gives (issue 22's trial): each is refused by name with
// exit 2 (or, for a report whose own run failed, exit 1), never read as something else.
// Every TEST here is a row of docs/bad-input.md.
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"
#include "tests/support/scratch_dir.h"

namespace rv::test {
namespace {

const std::string kCase = "contract=fixed-order,op=sum,w=2,n=1000,dist=normal,seed=1,gen=1";
const std::string kDigest = "da70afe5b69f7c40f5da45bdbbcc4ebb";  // kCase's fixed-order digest

void expect_refused(const ProcessResult& result, int code, const std::vector<std::string>& named) {
  ASSERT_TRUE(result.exited()) << summary(result);
  EXPECT_EQ(result.exit_code, code) << summary(result);
  for (const std::string& name : named) {
    EXPECT_NE(result.err.find(name), std::string::npos)
        << "stderr does not name '" << name << "': " << result.err;
  }
}

TEST(HostileInput, GoldenFileGivingOneCaseTwoDigestsIsRefusedByRun) {
  ScratchDir dir;
  std::string other = kDigest;
  other[0] = 'f';
  const std::string golden =
      dir.write("two.xxh128", "# two digests for one case\n" + kDigest + "  " + kCase + "\n" +
                                  other + "  " + kCase + "\n");
  const ProcessResult result = run_tool({"run", "--transport", "gloo", "--golden", golden});
  expect_refused(result, 2, {golden + ":2", golden + ":3", kCase});
  // Across two files too, and the same digest twice is no conflict.
  const std::string a = dir.write("a.xxh128", kDigest + "  " + kCase + "\n");
  const std::string b = dir.write("b.xxh128", other + "  " + kCase + "\n");
  expect_refused(run_tool({"run", "--transport", "gloo", "--golden", a, "--golden", b}), 2,
                 {a + ":1", b + ":1"});
  const std::string same =
      dir.write("same.xxh128", kDigest + "  " + kCase + "\n" + kDigest + "  " + kCase + "\n");
  const ProcessResult twice =
      run_tool({"run", "--transport", "gloo", "--golden", same, "--contract", "fixed-order"});
  EXPECT_EQ(twice.exit_code, 0) << summary(twice);
}

// A minimal run report of one fixed-order result, which `result` may change.
std::string report_with(const ScratchDir& dir, const std::string& name,
                        const std::function<void(nlohmann::json&)>& change) {
  nlohmann::json report = {
      {"format", "reduce-verify run report 1"},
      {"fingerprint", {{"host", "test"}}},
      {"results",
       {{{"case", kCase},
         {"verdict", "OK"},
         {"digest", kDigest},
         {"vs_exact", {{"differing_elements", 0}, {"max_ulp", 0}, {"mean_ulp", 0.0}}}}}},
      {"world_failures", nlohmann::json::array()}};
  change(report);
  return dir.write(name, report.dump());
}

TEST(HostileInput, CompareRefusesWrongTypesNamingFileAndField) {
  ScratchDir dir;
  const std::string good = report_with(dir, "good.json", [](nlohmann::json&) {});
  const struct {
    const char* field;
    std::function<void(nlohmann::json&)> change;
  } bad[] = {
      {"results[0].digest", [](nlohmann::json& r) { r["results"][0]["digest"] = 17; }},
      {"results[0].case",
       [](nlohmann::json& r) { r["results"][0]["case"] = nlohmann::json::array(); }},
      {"results[0].verdict", [](nlohmann::json& r) { r["results"][0]["verdict"] = true; }},
      {"results[0].verdict", [](nlohmann::json& r) { r["results"][0]["verdict"] = "MAYBE"; }},
      {"results[0].vs_exact.max_ulp",
       [](nlohmann::json& r) { r["results"][0]["vs_exact"]["max_ulp"] = -1; }},
      {"results[0].vs_exact.max_ulp",
       [](nlohmann::json& r) { r["results"][0]["vs_exact"]["max_ulp"] = "many"; }},
      {"results[0].vs_exact.max_ulp",
       [](nlohmann::json& r) { r["results"][0]["vs_exact"]["max_ulp"] = 1.5; }},
      {"results[0].vs_exact.mean_ulp",
       [](nlohmann::json& r) { r["results"][0]["vs_exact"]["mean_ulp"] = -0.5; }},
      {"results[0].vs_exact", [](nlohmann::json& r) { r["results"][0]["vs_exact"] = 3; }},
      {"fingerprint", [](nlohmann::json& r) { r["fingerprint"] = "x"; }},
      {"world_failures", [](nlohmann::json& r) { r["world_failures"] = 2; }},
      {"format", [](nlohmann::json& r) { r["format"] = "reduce-verify run report 9"; }},
      {"format", [](nlohmann::json& r) { r.erase("format"); }},
  };
  int i = 0;
  for (const auto& b : bad) {
    const std::string path = report_with(dir, "bad" + std::to_string(i++) + ".json", b.change);
    SCOPED_TRACE(ScratchDir::read(path));
    const ProcessResult result = run_tool({"compare", good, path});
    expect_refused(result, 2, {path + ": " + b.field + ": "});
    EXPECT_EQ(result.err.find("type_error"), std::string::npos) << result.err;
  }
}

TEST(HostileInput, CompareRefusesACaseListedTwice) {
  ScratchDir dir;
  const std::string good = report_with(dir, "good.json", [](nlohmann::json&) {});
  const std::string twice = report_with(
      dir, "twice.json", [](nlohmann::json& r) { r["results"].push_back(r["results"][0]); });
  expect_refused(run_tool({"compare", good, twice}), 2,
                 {twice + ": results[1].case: '" + kCase + "' is listed twice"});
}

TEST(HostileInput, CompareShowsLargeMaxUlpExactly) {
  ScratchDir dir;
  const std::string a = report_with(dir, "a.json", [](nlohmann::json& r) {
    r["results"][0]["vs_exact"]["max_ulp"] = 99999999999ULL;
  });
  const ProcessResult result = run_tool({"compare", a, a});
  EXPECT_EQ(result.exit_code, 0) << summary(result);
  EXPECT_NE(result.out.find("max 99999999999 ulp"), std::string::npos) << result.out;
}

TEST(HostileInput, CompareFailsAReportWhoseRunFailed) {
  ScratchDir dir;
  const std::string good = report_with(dir, "good.json", [](nlohmann::json&) {});
  const std::string world_failed = report_with(dir, "world.json", [](nlohmann::json& r) {
    r["world_failures"].push_back({{"world", 3}, {"what", "rank 1 died"}, {"cases", 4}});
  });
  expect_refused(run_tool({"compare", good, world_failed}), 1, {world_failed, "1 worlds failed"});
  const std::string all_failed = report_with(
      dir, "failed.json", [](nlohmann::json& r) { r["results"][0]["verdict"] = "FAILED"; });
  expect_refused(run_tool({"compare", all_failed, good}), 1, {all_failed, "1 results FAILED"});
}

TEST(HostileInput, RunRefusesASpacedWorldList) {
  expect_refused(run_tool({"run", "--transport", "gloo", "--case", kCase, "--world", "2", "3"}), 2,
                 {"--world 2 3", "--world 2,3"});
}

TEST(HostileInput, RunRefusesAWorldThatIsNotTheNumberOfInputFiles) {
  ScratchDir dir;
  const std::string r0 = dir.write("r0.f32", std::string(16, '\0'));
  const std::string r1 = dir.write("r1.f32", std::string(16, '\0'));
  expect_refused(run_tool({"run", "--transport", "gloo", "--world", "3", "--inputs", r0, r1}), 2,
                 {"--world 3 does not match --inputs: 2 files"});
}

TEST(HostileInput, NumericOptionsThatAreNoNumberSaySo) {
  for (const std::string option : {"--timeout", "--iters", "--max-world", "--world"}) {
    expect_refused(run_tool({"run", "--transport", "gloo", "--case", kCase, option, "abc"}), 2,
                   {option, "'abc' is not a number"});
  }
}

TEST(HostileInput, JobIdTooLongForItsWorldsIsRefusedBeforeTheRun) {
  expect_refused(
      run_tool({"run", "--transport", "gloo", "--case", kCase, "--job-id", std::string(126, 'j')}),
      2, {"--job-id " + std::string(126, 'j') + ": the supervisor names the directory"});
}

TEST(HostileInput, MissingTmpdirIsNamed) {
  ProcessOptions options;
  options.extra_env = {"TMPDIR=/nonexistent-rv-tmp"};
  expect_refused(run_tool({"run", "--transport", "gloo", "--case", kCase}, options), 2,
                 {"TMPDIR=/nonexistent-rv-tmp: No such file or directory"});
}

TEST(HostileInput, ReadOnlyTmpdirIsNamed) {
  ScratchDir dir;
  const std::string ro = dir.file("ro");
  ASSERT_EQ(::mkdir(ro.c_str(), 0755), 0);
  if (::mount("tmpfs", ro.c_str(), "tmpfs", MS_RDONLY, "size=64k") != 0) {
    GTEST_SKIP() << "cannot mount a read-only tmpfs here (" << std::strerror(errno)
                 << "; needs root)";
  }
  ProcessOptions options;
  options.extra_env = {"TMPDIR=" + ro};
  const ProcessResult result = run_tool({"run", "--transport", "gloo", "--case", kCase}, options);
  ::umount2(ro.c_str(), MNT_DETACH);
  expect_refused(result, 2, {"TMPDIR=" + ro + ": cannot create the rendezvous directory: "});
}

// A file name with a newline would end `digest`'s line early and could put a line that looks
// like a golden one on stdout; it is escaped as xxh128sum escapes names.
TEST(HostileInput, FileNameWithANewlineCannotForgeAGoldenLine) {
  ScratchDir dir;
  const std::string forged = "x\n" + kDigest + "  " + kCase;
  const std::string path = dir.write(forged, std::string(8, '\0'));
  const ProcessResult result = run_tool({"digest", "--inputs", path});
  ASSERT_EQ(result.exit_code, 0) << summary(result);
  const std::vector<std::string> lines = split_lines(result.out);
  ASSERT_EQ(lines.size(), 1u) << result.out;
  EXPECT_EQ(lines[0].front(), '\\') << lines[0];
  EXPECT_NE(lines[0].find("x\\n" + kDigest), std::string::npos) << lines[0];
  const ProcessResult plain =
      run_tool({"digest", "--inputs", dir.write("plain", std::string(8, '\0'))});
  EXPECT_NE(plain.out.front(), '\\') << "a plain name is not escaped: " << plain.out;
}

TEST(HostileInput, BadContractInACaseIdListsEveryContract) {
  expect_refused(
      run_tool({"digest", "--case", "contract=fast,op=sum,w=2,n=10,dist=normal,seed=1,gen=1"}), 2,
      {"contract 'fast' is not fixed-order, library-sum or exact"});
}

}  // namespace
}  // namespace rv::test
