// Digests (docs/DESIGN.md §3): XXH3-128 with seed 0 of an arena's bytes as little-endian
// values of its dtype (binary32; bf16 and f16 2 bytes an element), written as 32 lowercase hex digits in xxHash's canonical (big-endian) form —
// exactly what `xxh128sum FILE` prints for a file holding those bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/case_id.h"
#include "core/dtype.h"

namespace rv {

struct Digest {
  std::array<std::uint8_t, 16> canonical{};  // big-endian bytes, as xxHash's canonical form
  std::string hex() const;
  bool operator==(const Digest& other) const { return canonical == other.canonical; }
  bool operator!=(const Digest& other) const { return !(*this == other); }
};

// 32 lowercase hex digits, or nothing.
std::optional<Digest> parse_digest_hex(std::string_view text);

// Incremental hashing of a byte stream; the same digest as hashing the bytes at once.
class DigestStream {
 public:
  DigestStream();
  ~DigestStream();
  DigestStream(const DigestStream&) = delete;
  DigestStream& operator=(const DigestStream&) = delete;
  void update(const void* bytes, std::size_t size);
  void update_floats(const float* values, std::size_t count) {
    update(static_cast<const void*>(values), count * sizeof(float));
  }
  // Widened values of `dtype`, hashed as that dtype's own bytes (2 per element for bf16/f16).
  void update_values(const float* values, std::size_t count, DType dtype);
  Digest finish() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Digest digest_bytes(const void* bytes, std::size_t size);
Digest digest_floats(const float* values, std::size_t count);
// The digest of widened values of `dtype` as that dtype's bytes (docs/DESIGN.md §2.5): what
// `xxh128sum` prints for the file `--dump` writes. digest_floats for f32.
Digest digest_values(const float* values, std::size_t count, DType dtype);

// The golden digest of a case, re-derived from its id alone (the streaming reference fold).
Digest digest_case(const CaseId& id);

// "xxHash 0.8.1"
std::string xxhash_version();

}  // namespace rv
