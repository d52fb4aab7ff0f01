// The membership handshake of a pair connection (docs/DESIGN.md §10), as frames and as the
// listener's state machine. A connector (the higher rank of a pair) and a listener (the
// lower) each prove they hold the job's secret, over both sides' fresh nonces, before the
// socket is handed to the transport:
//
//   connector -> listener  hello      "RVMESH1H" from to world 0 (u32, big-endian) nonce_c
//   listener  -> connector challenge  "RVMESH1C" nonce_l mac_l
//   connector -> listener  proof      "RVMESH1P" mac_c
//   listener  -> connector accept     "RVMESH1A"
//
// mac_l = HMAC-SHA256(secret, "reduce-verify listener\0" hello nonce_l) and mac_c the same
// with "reduce-verify connector\0": the labels keep one side's proof from being reflected
// as the other's, and the nonces keep a recorded handshake from being replayed. Every frame
// has a fixed size, and the connector sends nothing after its proof until it reads the
// accept, so the handshake never reads a byte that belongs to the transport.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/transport/membership/membership_secret.h"

namespace rv {
namespace membership {

inline constexpr std::size_t kMagicBytes = 8;
inline constexpr std::size_t kHelloBytes = kMagicBytes + 16 + kNonceBytes;
inline constexpr std::size_t kChallengeBytes = kMagicBytes + kNonceBytes + kMacBytes;
inline constexpr std::size_t kProofBytes = kMagicBytes + kMacBytes;
inline constexpr std::size_t kAcceptBytes = kMagicBytes;

struct Hello {
  std::uint32_t from = 0, to = 0, world = 0;
  Nonce nonce{};
};
struct Challenge {
  Nonce nonce{};
  Mac mac{};
};

using Frame = std::vector<unsigned char>;

Frame encode_hello(const Hello& hello);
Frame encode_challenge(const Challenge& challenge);
Frame encode_proof(const Mac& mac);
Frame encode_accept();

// Each decoder takes exactly one frame's bytes; nullopt when they are not that frame (wrong
// size, magic or reserved field). Whatever decodes re-encodes to the same bytes.
std::optional<Hello> decode_hello(const unsigned char* bytes, std::size_t size);
std::optional<Challenge> decode_challenge(const unsigned char* bytes, std::size_t size);
std::optional<Mac> decode_proof(const unsigned char* bytes, std::size_t size);
bool is_accept(const unsigned char* bytes, std::size_t size);

// The two proofs over a hello (as encoded) and the listener's nonce.
Mac listener_mac(const Secret& secret, const Frame& hello, const Nonce& listener_nonce);
Mac connector_mac(const Secret& secret, const Frame& hello, const Nonce& listener_nonce);

// The listener's side of one connection, socket-free: the caller reads at most needed()
// bytes at a time and passes them to take(), sends what a step says, and hands the socket
// on at kAccepted or closes it at kRefused (why says what was wrong, for the count of
// strangers). A connector is accepted only if it names this rank, this world and a rank
// above this one (the higher rank of a pair dials), and proves it holds the secret.
class ListenerHandshake {
 public:
  enum class Kind { kMore, kSend, kAccepted, kRefused };
  struct Step {
    Kind kind = Kind::kMore;
    Frame reply;             // kSend: the challenge; kAccepted: the accept
    std::uint32_t rank = 0;  // kAccepted: the connector's rank
    std::string why;         // kRefused
  };

  ListenerHandshake(const Secret& secret, std::uint32_t me, std::uint32_t world,
                    const Nonce& nonce);

  // Bytes still needed to complete the current frame (0 once finished).
  std::size_t needed() const;
  // Takes 1..needed() bytes.
  Step take(const unsigned char* bytes, std::size_t size);

 private:
  enum class State { kHello, kProof, kDone };
  Step on_hello();
  Step on_proof();

  const Secret secret_;
  std::uint32_t me_, world_;
  Nonce nonce_;
  State state_ = State::kHello;
  Frame buffer_;
  Frame hello_;
  std::uint32_t from_ = 0;
};

}  // namespace membership
}  // namespace rv
