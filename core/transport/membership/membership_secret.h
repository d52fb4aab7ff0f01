// The per-job secret that makes a process a member of a world (docs/DESIGN.md §10): 32 bytes
// from getrandom(2), drawn by rank 0 and shared through the rendezvous store, which only the
// job's user can read. Whoever can read it is a member; nobody else can compute a proof.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace rv {
namespace membership {

inline constexpr std::size_t kSecretBytes = 32;
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kMacBytes = 32;  // HMAC-SHA256

using Secret = std::array<unsigned char, kSecretBytes>;
using Nonce = std::array<unsigned char, kNonceBytes>;
using Mac = std::array<unsigned char, kMacBytes>;

// Fresh random bytes from getrandom(2). Throws RuntimeFailure if the kernel refuses.
Secret draw_secret();
Nonce draw_nonce();

// The secret as stored, and back; a record of any other size is a RuntimeFailure naming
// `where` (it was not written by this tool, or was cut short).
std::vector<char> encode_secret(const Secret& secret);
Secret decode_secret(const std::vector<char>& bytes, const std::string& where);

// HMAC-SHA256 of `message` under `secret` (RFC 2104; OpenSSL's implementation).
Mac keyed_mac(const Secret& secret, const unsigned char* message, std::size_t size);

// Compares two MACs in time that does not depend on where they differ.
bool macs_equal(const Mac& a, const Mac& b);

}  // namespace membership
}  // namespace rv
