#include "verify/audit/trail_audit.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace rv {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "(none recorded)" : out;
}

std::string layout(const TrailStep& step) {
  std::string out = std::to_string(step.buckets.size()) + " buckets [";
  for (std::size_t i = 0; i < step.buckets.size(); ++i) {
    out += (i ? " " : "") + std::to_string(step.buckets[i].numel);
    if (!step.buckets[i].layout.empty()) out += ":" + step.buckets[i].layout;
  }
  return out + "]";
}

// The same buckets: index and count, and, where both records name it, the parameters' order
// (a resumed run's fresh DDP reduces its first step in its initial bucket order, the
// uninterrupted run in the rebuilt one: the same counts, other bytes).
bool same_layout(const TrailStep& a, const TrailStep& b) {
  if (a.buckets.size() != b.buckets.size()) return false;
  for (std::size_t i = 0; i < a.buckets.size(); ++i) {
    const TrailBucket& x = a.buckets[i];
    const TrailBucket& y = b.buckets[i];
    if (x.index != y.index || x.numel != y.numel) return false;
    if (!x.layout.empty() && !y.layout.empty() && x.layout != y.layout) return false;
  }
  return true;
}

// The first rank whose digest differs, or world.
std::uint32_t first_difference(const std::vector<std::string>& a,
                               const std::vector<std::string>& b) {
  const auto at = std::mismatch(a.begin(), a.end(), b.begin());
  return static_cast<std::uint32_t>(at.first - a.begin());
}

void line_up(const TrailFile& a, const TrailFile& b) {
  if (a.world != b.world) {
    throw InputError("the trails do not line up: " + a.path + " is a world of " +
                     std::to_string(a.world) + ", " + b.path + " of " + std::to_string(b.world));
  }
  if (a.parameters != 0 && b.parameters != 0 && a.parameters != b.parameters) {
    throw InputError("the trails do not line up: they are of different models (" + a.path + ": " +
                     std::to_string(a.parameters) + " parameters, " + b.path + ": " +
                     std::to_string(b.parameters) + " parameters)");
  }
  if (a.digest_kind != b.digest_kind) {
    throw InputError("the trails do not line up: " + a.path + " digests with " + a.digest_kind +
                     ", " + b.path + " with " + b.digest_kind);
  }
  if (a.start_step != b.start_step) {
    throw InputError("the trails do not line up: " + a.path + " starts at step " +
                     std::to_string(a.start_step) + ", " + b.path + " at step " +
                     std::to_string(b.start_step));
  }
}

}  // namespace

const char* to_string(Parting parting) {
  switch (parting) {
    case Parting::kNone:
      return "agree";
    case Parting::kComputeUpstream:
      return "compute upstream differs";
    case Parting::kReduction:
      return "the reduction is not reproducible";
    case Parting::kLayout:
      return "the bucket layouts differ";
    case Parting::kOptimizer:
      return "the optimizer step differs";
  }
  return "?";
}

AuditResult audit_trails(const TrailFile& a, const TrailFile& b) {
  line_up(a, b);
  AuditResult result;
  const std::size_t shared = std::min(a.steps.size(), b.steps.size());
  const std::string hooks = "hooks: A " + join(a.hooks) + "; B " + join(b.hooks);
  auto part = [&](Parting parting, const TrailStep& sa, const TrailStep& sb, std::uint64_t bucket,
                  std::uint32_t rank, const std::string& where, const std::string& detail) {
    result.parting = parting;
    result.step = sa.step;
    result.bucket = bucket;
    result.rank = rank;
    result.record_a = sa.record;
    result.record_b = sb.record;
    result.summary = "step " + std::to_string(sa.step) + where + ": " + to_string(parting);
    result.detail = detail + "\n" + hooks + "\nrecords: " + a.path + ":" +
                    std::to_string(sa.record) + ", " + b.path + ":" + std::to_string(sb.record) +
                    "\nto replay it on another box, record step " + std::to_string(sa.step) +
                    " in full: reduce_verify.Recorder(DIR, steps=[" + std::to_string(sa.step) +
                    "]) in both runs";
  };
  for (std::size_t i = 0; i < shared && result.parting == Parting::kNone; ++i) {
    const TrailStep& sa = a.steps[i];
    const TrailStep& sb = b.steps[i];
    result.steps_compared = i + 1;
    if (!same_layout(sa, sb)) {
      if (result.note.empty()) {
        result.note = "the bucket layouts differ from step " + std::to_string(sa.step) + " (A " +
                      layout(sa) + ", B " + layout(sb) +
                      "): such steps are compared by their parameters only";
      }
      if (sa.params != sb.params) {
        const std::uint32_t rank = first_difference(sa.params, sb.params);
        part(Parting::kLayout, sa, sb, 0, rank, " (parameters, rank " + std::to_string(rank) + ")",
             "A reduced " + layout(sa) + ", B " + layout(sb) +
                 " (numel[:parameter order] per bucket): bucket "
                 "digests cannot be compared, and the parameters after the step differ (A " +
                 sa.params[rank] + ", B " + sb.params[rank] +
                 "); a reduction whose bits depend "
                 "on the bucket layout (DDP's default all-reduce does) is the likely cause");
      }
      continue;
    }
    for (std::size_t k = 0; k < sa.buckets.size() && result.parting == Parting::kNone; ++k) {
      const TrailBucket& ba = sa.buckets[k];
      const TrailBucket& bb = sb.buckets[k];
      const std::string where_bucket = ", bucket " + std::to_string(k) + " (DDP index " +
                                       std::to_string(ba.index) + ", " + std::to_string(ba.numel) +
                                       " elements)";
      if (ba.inputs != bb.inputs) {
        const std::uint32_t rank = first_difference(ba.inputs, bb.inputs);
        std::size_t ranks = 0;
        for (std::size_t r = 0; r < ba.inputs.size(); ++r) ranks += ba.inputs[r] != bb.inputs[r];
        part(Parting::kComputeUpstream, sa, sb, k, rank,
             where_bucket + ", rank " + std::to_string(rank),
             "rank " + std::to_string(rank) + "'s input: A " + ba.inputs[rank] + ", B " +
                 bb.inputs[rank] + " (" + std::to_string(ranks) + " of " +
                 std::to_string(ba.inputs.size()) +
                 " ranks' inputs differ in this bucket): the "
                 "gradients differ before the reduction (data, model or compute)");
      } else if (ba.results != bb.results) {
        const std::uint32_t rank = first_difference(ba.results, bb.results);
        part(Parting::kReduction, sa, sb, k, rank, where_bucket + ", rank " + std::to_string(rank),
             "every rank's input agrees; rank " + std::to_string(rank) + "'s reduced result: A " +
                 ba.results[rank] + ", B " + bb.results[rank]);
      }
    }
    if (result.parting != Parting::kNone) break;
    if (sa.params != sb.params || sa.optimizer != sb.optimizer) {
      const bool params = sa.params != sb.params;
      const auto& da = params ? sa.params : sa.optimizer;
      const auto& db = params ? sb.params : sb.optimizer;
      const std::uint32_t rank = first_difference(da, db);
      const std::string what = params ? "parameters" : "optimizer state";
      part(Parting::kOptimizer, sa, sb, 0, rank,
           " (" + what + ", rank " + std::to_string(rank) + ")",
           "every bucket's inputs and results agree; the " + what + " after the step: A " +
               (rank < da.size() ? da[rank] : "(none)") + ", B " +
               (rank < db.size() ? db[rank] : "(none)"));
    }
  }
  if (result.parting == Parting::kNone) {
    // Agreeing as far as both go: the step ranges must be the same, or one was cut off.
    for (const auto* trail : {&a, &b}) {
      const TrailFile& other = trail == &a ? b : a;
      if (trail->steps.size() < other.steps.size()) {
        const std::string last =
            trail->steps.empty() ? "no step" : "step " + std::to_string(trail->steps.back().step);
        throw InputError("the trails do not line up: " + trail->path + " ends at " + last +
                         " (record " + std::to_string(trail->records) + ", " +
                         (trail->ended ? "with its end record"
                                       : "without an end record: truncated or still "
                                         "being written") +
                         "), " + other.path + " goes on to step " +
                         std::to_string(other.steps.back().step) + "; they agree up to there");
      }
    }
    result.summary = std::to_string(result.steps_compared) + " steps agree";
  }
  result.report = {{"trail_a", a.path},
                   {"trail_b", b.path},
                   {"world", a.world},
                   {"hooks_a", a.hooks},
                   {"hooks_b", b.hooks},
                   {"steps_compared", result.steps_compared},
                   {"verdict", result.parting == Parting::kNone ? "agree" : "part"},
                   {"classification", to_string(result.parting)},
                   {"summary", result.summary}};
  if (!result.note.empty()) result.report["note"] = result.note;
  if (result.parting != Parting::kNone) {
    result.report["step"] = result.step;
    result.report["bucket"] = result.bucket;
    result.report["rank"] = result.rank;
    result.report["record_a"] = result.record_a;
    result.report["record_b"] = result.record_b;
    result.report["detail"] = result.detail;
  }
  return result;
}

}  // namespace rv
