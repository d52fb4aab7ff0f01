// XXH3-128 (seed 0, the default secret) of exactly one 4 KiB leaf of the digest tree
// (docs/DESIGN.md §12), written once for the host and the device: the CPU test holds it to
// xxHash's XXH3_128bits on the same bytes, and the CUDA kernel runs the same code, so the
// device's bits are the host's. Only XXH3's long-input path exists here: a leaf is always
// 4096 bytes (the tree pads the tensor to whole leaves).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define RV_HOST_DEVICE __host__ __device__
#else
#define RV_HOST_DEVICE
#endif

namespace rv::xxh3_leaf {

constexpr std::size_t kLeafBytes = 4096;
constexpr std::size_t kSecretBytes = 192;  // XXH3's default secret
constexpr std::size_t kStripeBytes = 64;
constexpr std::size_t kStripesPerBlock = (kSecretBytes - kStripeBytes) / 8;  // 16
constexpr std::size_t kBlockBytes = kStripeBytes * kStripesPerBlock;         // 1024

constexpr std::uint64_t kPrime32_1 = 0x9E3779B1U, kPrime32_2 = 0x85EBCA77U,
                        kPrime32_3 = 0xC2B2AE3DU;
constexpr std::uint64_t kPrime64_1 = 0x9E3779B185EBCA87ULL, kPrime64_2 = 0xC2B2AE3D27D4EB4FULL,
                        kPrime64_3 = 0x165667B19E3779F9ULL, kPrime64_4 = 0x85EBCA77C2B2AE63ULL,
                        kPrime64_5 = 0x27D4EB2F165667C5ULL;

// The secret as the little-endian u64 at each of its byte offsets: XXH3 reads it at offsets
// that are not all 8-aligned, and one table read per word keeps the device's hot loop to one
// uniform (broadcast) load instead of eight byte loads.
struct SecretWords {
  std::uint64_t at[kSecretBytes - 7];
};

RV_HOST_DEVICE inline SecretWords secret_words(const std::uint8_t* secret) {
  SecretWords words{};
  for (std::size_t at = 0; at + 8 <= kSecretBytes; ++at) {
    std::uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = (value << 8) | secret[at + static_cast<std::size_t>(i)];
    words.at[at] = value;
  }
  return words;
}

RV_HOST_DEVICE inline std::uint64_t mul128_fold64(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  __extension__ typedef unsigned __int128 u128;  // GCC and Clang; -Wpedantic accepts it so
  const u128 product = static_cast<u128>(a) * b;
  return static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
#endif
}

RV_HOST_DEVICE inline std::uint64_t avalanche(std::uint64_t h) {
  h ^= h >> 37;
  h *= 0x165667919E3779F9ULL;
  return h ^ (h >> 32);
}

// load(offset) returns the little-endian u64 at that byte offset of the leaf.
template <typename Load>
RV_HOST_DEVICE inline void accumulate_stripe(std::uint64_t acc[8], const Load& load,
                                             std::size_t offset, const SecretWords& secret,
                                             std::size_t secret_at) {
  for (std::size_t i = 0; i < 8; ++i) {
    const std::uint64_t value = load(offset + 8 * i);
    const std::uint64_t key = value ^ secret.at[secret_at + 8 * i];
    acc[i ^ 1] += value;
    acc[i] += (key & 0xFFFFFFFFULL) * (key >> 32);
  }
}

RV_HOST_DEVICE inline void scramble(std::uint64_t acc[8], const SecretWords& secret) {
  for (std::size_t i = 0; i < 8; ++i) {
    std::uint64_t a = acc[i];
    a ^= a >> 47;
    a ^= secret.at[kSecretBytes - kStripeBytes + 8 * i];
    acc[i] = a * kPrime32_1;
  }
}

RV_HOST_DEVICE inline std::uint64_t merge(const std::uint64_t acc[8], const SecretWords& secret,
                                          std::size_t secret_at, std::uint64_t start) {
  std::uint64_t result = start;
  for (std::size_t i = 0; i < 4; ++i) {
    result += mul128_fold64(acc[2 * i] ^ secret.at[secret_at + 16 * i],
                            acc[2 * i + 1] ^ secret.at[secret_at + 16 * i + 8]);
  }
  return avalanche(result);
}

// The leaf's digest in xxHash's canonical form: high 64 bits then low, big-endian.
template <typename Load>
RV_HOST_DEVICE inline void leaf_digest(const Load& load, const SecretWords& secret,
                                       std::uint8_t canonical[16]) {
  std::uint64_t acc[8] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3,
                          kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};
  const std::size_t blocks = (kLeafBytes - 1) / kBlockBytes;  // 3 full blocks, scrambled
  for (std::size_t b = 0; b < blocks; ++b) {
    for (std::size_t s = 0; s < kStripesPerBlock; ++s) {
      accumulate_stripe(acc, load, b * kBlockBytes + s * kStripeBytes, secret, s * 8);
    }
    scramble(acc, secret);
  }
  const std::size_t stripes = ((kLeafBytes - 1) - blocks * kBlockBytes) / kStripeBytes;
  for (std::size_t s = 0; s < stripes; ++s) {
    accumulate_stripe(acc, load, blocks * kBlockBytes + s * kStripeBytes, secret, s * 8);
  }
  accumulate_stripe(acc, load, kLeafBytes - kStripeBytes, secret, kSecretBytes - kStripeBytes - 7);
  const std::uint64_t length = kLeafBytes;
  const std::uint64_t low = merge(acc, secret, 11, length * kPrime64_1);
  const std::uint64_t high = merge(acc, secret, kSecretBytes - 64 - 11, ~(length * kPrime64_2));
  for (int i = 0; i < 8; ++i) {
    canonical[i] = static_cast<std::uint8_t>(high >> (56 - 8 * i));
    canonical[8 + i] = static_cast<std::uint8_t>(low >> (56 - 8 * i));
  }
}

}  // namespace rv::xxh3_leaf
