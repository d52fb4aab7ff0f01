#include "core/transport/membership/membership_secret.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace rv {
namespace membership {
namespace {

void fill_random(unsigned char* bytes, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::getrandom(bytes + done, size - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw RuntimeFailure(detail::concat("getrandom: ", std::strerror(errno)));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

Secret draw_secret() {
  Secret secret{};
  fill_random(secret.data(), secret.size());
  return secret;
}

Nonce draw_nonce() {
  Nonce nonce{};
  fill_random(nonce.data(), nonce.size());
  return nonce;
}

std::vector<char> encode_secret(const Secret& secret) {
  return std::vector<char>(secret.begin(), secret.end());
}

Secret decode_secret(const std::vector<char>& bytes, const std::string& where) {
  if (bytes.size() != kSecretBytes) {
    throw RuntimeFailure(detail::concat("the membership secret ", where, " has ", bytes.size(),
                                        " bytes, not ", kSecretBytes,
                                        " (not written by this tool, or cut short)"));
  }
  Secret secret{};
  std::memcpy(secret.data(), bytes.data(), kSecretBytes);
  return secret;
}

Mac keyed_mac(const Secret& secret, const unsigned char* message, std::size_t size) {
  Mac mac{};
  unsigned int length = 0;
  static const unsigned char kEmpty = 0;
  if (::HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
             size == 0 ? &kEmpty : message, size, mac.data(), &length) == nullptr ||
      length != mac.size()) {
    throw RuntimeFailure("HMAC-SHA256 failed (OpenSSL)");
  }
  return mac;
}

bool macs_equal(const Mac& a, const Mac& b) {
  return ::CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace membership
}  // namespace rv
