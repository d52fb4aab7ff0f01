// Loading NCCL at run time, on any box (no GPU needed): a missing file and a library that is
// not NCCL are named errors, the version floor holds, and a real NCCL (when this box has
// one on the loader's path) reports its version and the file it came from.
#include "core/transport/nccl/nccl_library.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace rv {
namespace {

std::string load_error(const std::string& file) {
  try {
    NcclLibrary::load(file);
  } catch (const RuntimeFailure& e) {
    return e.what();
  }
  return "";
}

TEST(NcclLibrary, AMissingFileIsANamedError) {
  const std::string error = load_error("/nonexistent/folder/libnccl.so.2");
  EXPECT_NE(error.find("cannot load NCCL from '/nonexistent/folder/libnccl.so.2'"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("LD_LIBRARY_PATH"), std::string::npos) << error;
}

TEST(NcclLibrary, ALibraryThatIsNotNcclIsRefused) {
  const std::string error = load_error("libm.so.6");
  EXPECT_NE(error.find("is not a usable NCCL"), std::string::npos) << error;
  EXPECT_NE(error.find("ncclGetVersion"), std::string::npos) << error;
}

TEST(NcclLibrary, VersionTextAndFloor) {
  EXPECT_EQ(nccl_version_text(22809), "2.28.9");
  EXPECT_EQ(nccl_version_text(21803), "2.18.3");
  EXPECT_EQ(nccl_version_text(2804), "2.8.4");
  EXPECT_NO_THROW(check_nccl_version(kNcclVersionFloor, "x"));
  EXPECT_NO_THROW(check_nccl_version(22803, "x"));
  try {
    check_nccl_version(21705, "/opt/old/libnccl.so.2");
    FAIL() << "2.17.5 is below the floor";
  } catch (const RuntimeFailure& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("2.17.5"), std::string::npos) << what;
    EXPECT_NE(what.find("/opt/old/libnccl.so.2"), std::string::npos) << what;
  }
}

TEST(NcclLibrary, TheLoadersNcclReportsVersionAndFile) {
  const NcclLibrary* library = nullptr;
  try {
    library = &NcclLibrary::load();
  } catch (const RuntimeFailure& e) {
    GTEST_SKIP() << "no NCCL on this box's loader path: " << e.what();
  }
  std::cout << "loaded " << library->describe() << "\n";
  EXPECT_GE(library->version_code(), kNcclVersionFloor);
  EXPECT_NE(library->path().find("libnccl"), std::string::npos) << library->path();
  EXPECT_EQ(library->describe(), "NCCL " + library->version() + " (" + library->path() + ")");
  EXPECT_EQ(&NcclLibrary::load(), library) << "loaded once per process";
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  ASSERT_NE(nvls, nullptr) << "NVLink multicast must be switched off before NCCL starts";
  EXPECT_EQ(std::string(nvls), "0");
}

}  // namespace
}  // namespace rv
