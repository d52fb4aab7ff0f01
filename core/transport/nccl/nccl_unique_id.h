// NCCL's unique id travels from rank 0 to the other ranks through the job directory: rank 0
// writes it to a private temporary and renames it into place (readers see the whole record
// or none), the others poll for it until their deadline. The record carries the launch's
// nonce and the world size, so a file left by another launch is never used: a reader
// waits past it, and its deadline names what it waited for. No NCCL types here (the id is
// its 128 opaque bytes), so this is testable without NCCL.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/deadline.h"

namespace rv {

inline constexpr std::size_t kNcclUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
inline constexpr const char* kNcclUniqueIdFile = "nccl-unique-id";

struct NcclIdRecord {
  std::string nonce;  // the launch's nonce ("-" when the launch has none)
  std::uint32_t world = 0;
  std::array<unsigned char, kNcclUniqueIdBytes> id{};
};

std::string format_nccl_id_record(const NcclIdRecord& record);
// nullopt unless `text` is exactly one well-formed record.
std::optional<NcclIdRecord> parse_nccl_id_record(std::string_view text);

// Rank 0: writes job_dir/nccl-unique-id atomically. Throws RuntimeFailure naming the file.
void publish_nccl_id(const std::string& job_dir, const NcclIdRecord& record);

// Rank r > 0: waits for a record with this nonce (any record when nonce is empty) until
// `deadline`. Throws DeadlineExceeded naming the rank, the file and the wait; InputError when
// the record's world differs from `world` (the ranks disagree on W).
NcclIdRecord await_nccl_id(const std::string& job_dir, const std::string& nonce, std::uint32_t rank,
                           std::uint32_t world, const Deadline& deadline);

}  // namespace rv
