#include "core/transport/nccl/nccl_unique_id.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/deadline.h"
#include "core/error.h"

namespace rv {
namespace {

constexpr std::string_view kMagic = "reduce-verify nccl-unique-id 1";

std::string file_in(const std::string& job_dir) { return job_dir + "/" + kNcclUniqueIdFile; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::optional<std::string> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string format_nccl_id_record(const NcclIdRecord& record) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char byte : record.id) {
    hex += digits[byte >> 4];
    hex += digits[byte & 15];
  }
  return std::string(kMagic) + "\nnonce " + (record.nonce.empty() ? "-" : record.nonce) +
         "\nworld " + std::to_string(record.world) + "\nid " + hex + "\n";
}

std::optional<NcclIdRecord> parse_nccl_id_record(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string magic, key_nonce, key_world, key_id, nonce, hex, rest;
  std::uint32_t world = 0;
  if (!std::getline(in, magic) || magic != kMagic) return std::nullopt;
  if (!(in >> key_nonce >> nonce >> key_world >> world >> key_id >> hex)) return std::nullopt;
  if (key_nonce != "nonce" || key_world != "world" || key_id != "id") return std::nullopt;
  if (in >> rest) return std::nullopt;  // trailing garbage
  if (hex.size() != 2 * kNcclUniqueIdBytes || world == 0) return std::nullopt;
  NcclIdRecord record;
  record.nonce = nonce == "-" ? "" : nonce;
  record.world = world;
  for (std::size_t i = 0; i < kNcclUniqueIdBytes; ++i) {
    const int high = hex_digit(hex[2 * i]), low = hex_digit(hex[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    record.id[i] = static_cast<unsigned char>(high * 16 + low);
  }
  return record;
}

void publish_nccl_id(const std::string& job_dir, const NcclIdRecord& record) {
  const std::string path = file_in(job_dir);
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << format_nccl_id_record(record);
    out.close();
    if (!out) {
      throw RuntimeFailure("cannot write the NCCL unique id to '" + temporary +
                           "': " + std::strerror(errno));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw RuntimeFailure("cannot publish the NCCL unique id as '" + path + "': " + why);
  }
}

NcclIdRecord await_nccl_id(const std::string& job_dir, const std::string& nonce, std::uint32_t rank,
                           std::uint32_t world, const Deadline& deadline) {
  const std::string path = file_in(job_dir);
  const auto started = Deadline::Clock::now();
  // Rank 0 publishes within milliseconds of its own start; a late rank 0 (still loading NCCL)
  // is polled at most 50 times a second.
  Backoff backoff(std::chrono::microseconds(100), std::chrono::milliseconds(20));
  std::string last_seen = "no such file";
  for (;;) {
    if (const auto text = read_whole_file(path)) {
      const auto record = parse_nccl_id_record(*text);
      if (!record) {
        last_seen = "a malformed record";
      } else if (!nonce.empty() && record->nonce != nonce) {
        last_seen = "a record of another launch (nonce " + record->nonce + ")";
      } else if (record->world != world) {
        throw InputError("rank " + std::to_string(rank) + " has world size " +
                         std::to_string(world) + " but rank 0 published the NCCL id for " +
                         std::to_string(record->world) + " ranks in '" + path + "'");
      } else {
        return *record;
      }
    }
    if (deadline.passed()) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::Clock::now() - started);
      throw DeadlineExceeded("rank " + std::to_string(rank) + " of " + std::to_string(world) +
                             ": rank 0 did not publish the NCCL unique id in '" + path +
                             "' within " + format_duration(waited) + " (found " + last_seen + ")");
    }
    backoff.sleep(deadline);
  }
}

}  // namespace rv
