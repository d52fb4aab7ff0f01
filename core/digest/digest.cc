#include "core/digest/digest.h"

#define XXH_INLINE_ALL  // header-only: the binary needs no libxxhash at run time
#include <xxhash.h>

#include "core/dtype_arrays.h"
#include "core/error.h"
#include "core/oracle/case_reduction.h"

namespace rv {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "digests hash the in-memory bytes as little-endian binary32");

namespace {

Digest from_hash(XXH128_hash_t hash) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  Digest digest;
  for (std::size_t i = 0; i < digest.canonical.size(); ++i) {
    digest.canonical[i] = canonical.digest[i];
  }
  return digest;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string Digest::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(32);
  for (std::uint8_t byte : canonical) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 15];
  }
  return text;
}

std::optional<Digest> parse_digest_hex(std::string_view text) {
  if (text.size() != 32) return std::nullopt;
  Digest digest;
  for (std::size_t i = 0; i < 16; ++i) {
    const int high = hex_value(text[2 * i]);
    const int low = hex_value(text[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    digest.canonical[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return digest;
}

struct DigestStream::State {
  XXH3_state_t xxh;
};

DigestStream::DigestStream() : state_(std::make_unique<State>()) {
  if (XXH3_128bits_reset_withSeed(&state_->xxh, 0) != XXH_OK) {
    throw InternalError("XXH3_128bits_reset failed");
  }
}

DigestStream::~DigestStream() = default;

void DigestStream::update(const void* bytes, std::size_t size) {
  if (size == 0) return;
  if (XXH3_128bits_update(&state_->xxh, bytes, size) != XXH_OK) {
    throw InternalError("XXH3_128bits_update failed");
  }
}

Digest DigestStream::finish() const { return from_hash(XXH3_128bits_digest(&state_->xxh)); }

Digest digest_bytes(const void* bytes, std::size_t size) {
  return from_hash(XXH3_128bits_withSeed(bytes, size, 0));
}

Digest digest_floats(const float* values, std::size_t count) {
  return digest_bytes(values, count * sizeof(float));
}

void DigestStream::update_values(const float* values, std::size_t count, DType dtype) {
  if (dtype == DType::kF32) {
    update_floats(values, count);
    return;
  }
  const std::vector<unsigned char> bytes = dtype_bytes_of(values, count, dtype);
  update(bytes.data(), bytes.size());
}

Digest digest_values(const float* values, std::size_t count, DType dtype) {
  DigestStream stream;
  stream.update_values(values, count, dtype);
  return stream.finish();
}

Digest digest_case(const CaseId& id) {
  DigestStream stream;
  stream_reference_reduction(id, [&](const float* values, std::size_t count) {
    stream.update_values(values, count, id.dtype);
  });
  return stream.finish();
}

std::string xxhash_version() {
  const unsigned v = XXH_versionNumber();
  return "xxHash " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

}  // namespace rv
