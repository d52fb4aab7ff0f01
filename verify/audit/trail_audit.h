// Lines two digest trails up step by step and names the first step, bucket and rank where
// they part, and why (docs/DESIGN.md §12, docs/audit.md).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "verify/audit/trail_file.h"

namespace rv {

enum class Parting {
  kNone,             // every shared step agrees
  kComputeUpstream,  // a bucket's input differs on some rank
  kReduction,        // a bucket's inputs agree on every rank, its result differs
  kLayout,           // the bucket layouts differ and so do the parameters after the step
  kOptimizer,        // every bucket agrees, the parameters (or optimizer state) differ
};

const char* to_string(Parting parting);

struct AuditResult {
  Parting parting = Parting::kNone;
  std::uint64_t step = 0, bucket = 0;  // bucket: position in the step's list
  std::uint32_t rank = 0;
  std::size_t record_a = 0, record_b = 0;
  std::uint64_t steps_compared = 0;
  std::string summary;    // one line: what parted, where, why
  std::string detail;     // the digests and the hooks behind it
  std::string note;       // the first step whose bucket layouts differ, if any
  nlohmann::json report;  // the same, for --json
};

// Throws InputError when the trails do not line up (world, digest kind, step ranges) or a
// shorter one was cut off; within the steps both hold, finds the first parting.
AuditResult audit_trails(const TrailFile& a, const TrailFile& b);

}  // namespace rv
