// The box fingerprint: what a digest's provenance needs — tool and commit, compiler and
// flags, CPU, floating-point state, library versions. `info` prints it; reports embed it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rv {

class Fingerprint {
 public:
  void add(std::string key, std::string value);
  // The value of key, or "" when absent.
  std::string get(const std::string& key) const;
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// Facts about this binary and this host (no transport facts).
Fingerprint host_fingerprint();

// "reduce-verify 0.1.0 (commit abc123)"
std::string tool_identity();

}  // namespace rv
