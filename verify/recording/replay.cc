#include "verify/recording/replay.h"

#include <vector>

#include "core/digest/digest.h"
#include "core/dtype_arrays.h"
#include "core/error.h"
#include "core/oracle/reference.h"
#include "verify/common/file_io.h"

namespace rv {
namespace {

std::uint64_t file_bytes(const RecordedBucket& bucket) {
  return bucket.digests.numel * dtype_bytes(bucket.dtype);
}

}  // namespace

std::string rank_file_path(const RecordingManifest& manifest, const RecordedBucket& bucket,
                           std::uint32_t rank) {
  return manifest.directory + "/" + bucket.files[rank];
}

void check_rank_files(const RecordingManifest& manifest) {
  for (const RecordedBucket& bucket : manifest.buckets) {
    for (std::uint32_t r = 0; r < manifest.world; ++r) {
      const std::string path = rank_file_path(manifest, bucket, r);
      std::uint64_t size = 0;
      try {
        size = regular_file_size(path);
      } catch (const InputError& error) {
        throw InputError(bucket.where + ": rank " + std::to_string(r) + "'s file: " + error.what());
      }
      if (size != file_bytes(bucket)) {
        throw InputError(path + ": " + std::to_string(size) + " bytes, but " + bucket.where +
                         " records " + std::to_string(bucket.digests.numel) + " values of " +
                         std::string(to_string(bucket.dtype)) + " (" +
                         std::to_string(file_bytes(bucket)) + " bytes)");
      }
    }
  }
}

ReplayOutcome replay_bucket(const RecordingManifest& manifest, const RecordedBucket& bucket) {
  ReplayOutcome outcome;
  const std::size_t count = bucket.digests.numel;
  std::vector<std::vector<float>> arenas;
  for (std::uint32_t r = 0; r < manifest.world; ++r) {
    const std::string path = rank_file_path(manifest, bucket, r);
    const std::string bytes = read_file_bytes(path, file_bytes(bucket));
    if (bytes.size() != file_bytes(bucket)) throw InputError(path + ": changed size while read");
    const std::string digest = digest_bytes(bytes.data(), bytes.size()).hex();
    if (digest != bucket.digests.inputs[r]) {
      if (outcome.files_differing++ == 0) {
        outcome.verdict = ReplayVerdict::kFailed;
        outcome.file = path;
        outcome.rank = r;
        outcome.got = digest;
        outcome.recorded = bucket.digests.inputs[r];
      }
      continue;
    }
    std::vector<float> values(count);
    widen_into(bytes.data(), count, bucket.dtype, values.data());
    arenas.push_back(std::move(values));
  }
  if (outcome.verdict == ReplayVerdict::kFailed) {
    outcome.reason = std::to_string(outcome.files_differing) + " of " +
                     std::to_string(manifest.world) + " rank files differ from their input digests";
    return outcome;
  }
  if (bucket.contract == Contract::kLibrarySum) {
    outcome.verdict = ReplayVerdict::kInputsOnly;
    outcome.reason =
        "library-sum: the collective library's own sum has no portable result to replay";
    return outcome;
  }
  const std::vector<float> reduced =
      expected_reduction(arenas, bucket.contract, bucket.op, bucket.dtype);
  const std::string replayed = digest_values(reduced.data(), reduced.size(), bucket.dtype).hex();
  for (std::uint32_t r = 0; r < manifest.world; ++r) {
    if (replayed != bucket.digests.results[r]) {
      outcome.verdict = ReplayVerdict::kFailed;
      outcome.rank = r;
      outcome.got = replayed;
      outcome.recorded = bucket.digests.results[r];
      outcome.reason = "the replayed result differs from rank " + std::to_string(r) + "'s";
      return outcome;
    }
  }
  return outcome;
}

}  // namespace rv
