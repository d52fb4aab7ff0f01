#include "core/reducer/agreement_record.h"

#include <algorithm>
#include <cstdio>

namespace rv {
namespace {

std::uint64_t fnv1a64(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

void put_le64(unsigned char* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

std::uint64_t get_le64(const unsigned char* in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(in[i]) << (8 * i);
  return v;
}

}  // namespace

AgreementRecord AgreementRecord::of(const std::string& text) {
  AgreementRecord record;
  record.hash = fnv1a64(text);
  record.length = text.size();
  record.prefix = text.substr(0, kPrefix);
  return record;
}

std::array<unsigned char, AgreementRecord::kBytes> AgreementRecord::encode() const {
  std::array<unsigned char, kBytes> bytes{};
  put_le64(bytes.data(), hash);
  put_le64(bytes.data() + 8, length);
  std::copy(prefix.begin(),
            prefix.begin() + static_cast<std::ptrdiff_t>(std::min(prefix.size(), kPrefix)),
            bytes.begin() + 16);
  return bytes;
}

AgreementRecord AgreementRecord::decode(const unsigned char* bytes) {
  AgreementRecord record;
  record.hash = get_le64(bytes);
  record.length = get_le64(bytes + 8);
  const std::size_t stored =
      static_cast<std::size_t>(std::min<std::uint64_t>(record.length, kPrefix));
  record.prefix.assign(reinterpret_cast<const char*>(bytes + 16), stored);
  return record;
}

bool AgreementRecord::intact(const unsigned char* bytes) {
  const std::uint64_t length = get_le64(bytes + 8);
  const std::size_t stored = static_cast<std::size_t>(std::min<std::uint64_t>(length, kPrefix));
  if (!std::all_of(bytes + 16 + stored, bytes + kBytes, [](unsigned char b) { return b == 0; })) {
    return false;
  }
  return length > kPrefix ||
         fnv1a64(std::string(reinterpret_cast<const char*>(bytes + 16), stored)) == get_le64(bytes);
}

std::string AgreementRecord::display() const {
  std::string shown;
  for (char c : prefix) shown.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  if (length > prefix.size()) {
    char tail[64];
    std::snprintf(tail, sizeof tail, "… (%llu characters, hash %016llx)",
                  static_cast<unsigned long long>(length), static_cast<unsigned long long>(hash));
    shown += tail;
  }
  return shown;
}

}  // namespace rv
