#include "verify/golden/fingerprint.h"

#include <unistd.h>

#include <fstream>
#include <thread>

#include "core/build_info/build_info.h"
#include "core/digest/digest.h"
#include "core/fp_environment.h"

namespace rv {

void Fingerprint::add(std::string key, std::string value) {
  for (auto& field : fields_) {
    if (field.first == key) {
      field.second = std::move(value);
      return;
    }
  }
  fields_.emplace_back(std::move(key), std::move(value));
}

std::string Fingerprint::get(const std::string& key) const {
  for (const auto& field : fields_) {
    if (field.first == key) return field.second;
  }
  return "";
}

namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("g++ ") + __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace

std::string tool_identity() { return build_info::tool_identity(); }

Fingerprint host_fingerprint() {
  Fingerprint fp;
  fp.add("tool", std::string("reduce-verify ") + build_info::kToolVersion);
  fp.add("commit", build_info::kGitCommit);
  fp.add("compiler", compiler());
  fp.add("build type", build_info::kBuildType);
  fp.add("cxx flags", build_info::kCxxFlags);
  if (*build_info::kCudaFlags) fp.add("cuda flags", build_info::kCudaFlags);
  fp.add("host", host_name());
  fp.add("cpu", cpu_model());
  fp.add("cpu threads", std::to_string(std::thread::hardware_concurrency()));
  const FpEnvironment env = read_fp_environment();
  fp.add("fp state", std::string("FTZ ") + (env.flush_to_zero ? "on" : "off") + ", DAZ " +
                         (env.denormals_are_zero ? "on" : "off") + ", rounding " + env.rounding +
                         (env.ieee() ? " (ok)" : " (BREAKS THE CONTRACT)"));
  fp.add("xxhash", xxhash_version());
  return fp;
}

}  // namespace rv
