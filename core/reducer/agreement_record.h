// The fixed-size record of agree_across_ranks: a 64-bit FNV-1a hash and the length of the
// whole text, and a printable prefix of it for the message. Little-endian on the wire so
// ranks on different hosts compare the same bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rv {

struct AgreementRecord {
  static constexpr std::size_t kPrefix = 240;
  static constexpr std::size_t kBytes = 16 + kPrefix;

  std::uint64_t hash = 0;
  std::uint64_t length = 0;
  std::string prefix;  // at most kPrefix bytes of the text

  static AgreementRecord of(const std::string& text);
  std::array<unsigned char, kBytes> encode() const;
  static AgreementRecord decode(const unsigned char* bytes);
  // Whether kBytes bytes could be an encode() at all: the padding past the text is zero and,
  // where the whole text fits the prefix, the hash is its hash. A record that is not intact
  // arrived corrupted (the transport changed it); one that is may still be another rank's
  // text.
  static bool intact(const unsigned char* bytes);

  bool operator==(const AgreementRecord& other) const {
    return hash == other.hash && length == other.length && prefix == other.prefix;
  }
  bool operator!=(const AgreementRecord& other) const { return !(*this == other); }

  // The prefix with unprintable bytes as '?', and, when the text was longer than the
  // prefix, its length and hash (two texts may differ only past the prefix).
  std::string display() const;
};

}  // namespace rv
