#include "core/transport/membership/handshake_frames.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace rv {
namespace membership {
namespace {

constexpr unsigned char kHelloMagic[kMagicBytes] = {'R', 'V', 'M', 'E', 'S', 'H', '1', 'H'};
constexpr unsigned char kChallengeMagic[kMagicBytes] = {'R', 'V', 'M', 'E', 'S', 'H', '1', 'C'};
constexpr unsigned char kProofMagic[kMagicBytes] = {'R', 'V', 'M', 'E', 'S', 'H', '1', 'P'};
constexpr unsigned char kAcceptMagic[kMagicBytes] = {'R', 'V', 'M', 'E', 'S', 'H', '1', 'A'};

constexpr char kListenerLabel[] = "reduce-verify listener";
constexpr char kConnectorLabel[] = "reduce-verify connector";

// Frames are written at fixed offsets into a buffer of their exact size.
void put_u32(unsigned char* at, std::uint32_t value) {
  at[0] = static_cast<unsigned char>(value >> 24);
  at[1] = static_cast<unsigned char>(value >> 16);
  at[2] = static_cast<unsigned char>(value >> 8);
  at[3] = static_cast<unsigned char>(value);
}

std::uint32_t get_u32(const unsigned char* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
         (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

bool starts_with(const unsigned char* bytes, const unsigned char (&magic)[kMagicBytes]) {
  return std::memcmp(bytes, magic, kMagicBytes) == 0;
}

// The MAC's message: the label with its terminating zero, the hello, the listener's nonce.
Mac transcript_mac(const Secret& secret, const char* label, std::size_t label_bytes,
                   const Frame& hello, const Nonce& listener_nonce) {
  Frame message(label_bytes + hello.size() + listener_nonce.size());
  std::memcpy(message.data(), label, label_bytes);
  std::memcpy(message.data() + label_bytes, hello.data(), hello.size());
  std::memcpy(message.data() + label_bytes + hello.size(), listener_nonce.data(),
              listener_nonce.size());
  return keyed_mac(secret, message.data(), message.size());
}

}  // namespace

Frame encode_hello(const Hello& hello) {
  Frame frame(kHelloBytes);
  unsigned char* at = frame.data();
  std::memcpy(at, kHelloMagic, kMagicBytes);
  put_u32(at + kMagicBytes, hello.from);
  put_u32(at + kMagicBytes + 4, hello.to);
  put_u32(at + kMagicBytes + 8, hello.world);
  put_u32(at + kMagicBytes + 12, 0);
  std::memcpy(at + kMagicBytes + 16, hello.nonce.data(), kNonceBytes);
  return frame;
}

Frame encode_challenge(const Challenge& challenge) {
  Frame frame(kChallengeBytes);
  std::memcpy(frame.data(), kChallengeMagic, kMagicBytes);
  std::memcpy(frame.data() + kMagicBytes, challenge.nonce.data(), kNonceBytes);
  std::memcpy(frame.data() + kMagicBytes + kNonceBytes, challenge.mac.data(), kMacBytes);
  return frame;
}

Frame encode_proof(const Mac& mac) {
  Frame frame(kProofBytes);
  std::memcpy(frame.data(), kProofMagic, kMagicBytes);
  std::memcpy(frame.data() + kMagicBytes, mac.data(), kMacBytes);
  return frame;
}

Frame encode_accept() { return Frame(kAcceptMagic, kAcceptMagic + kAcceptBytes); }

std::optional<Hello> decode_hello(const unsigned char* bytes, std::size_t size) {
  if (size != kHelloBytes || !starts_with(bytes, kHelloMagic)) return std::nullopt;
  const unsigned char* at = bytes + kMagicBytes;
  if (get_u32(at + 12) != 0) return std::nullopt;
  Hello hello;
  hello.from = get_u32(at);
  hello.to = get_u32(at + 4);
  hello.world = get_u32(at + 8);
  std::memcpy(hello.nonce.data(), at + 16, kNonceBytes);
  return hello;
}

std::optional<Challenge> decode_challenge(const unsigned char* bytes, std::size_t size) {
  if (size != kChallengeBytes || !starts_with(bytes, kChallengeMagic)) return std::nullopt;
  Challenge challenge;
  std::memcpy(challenge.nonce.data(), bytes + kMagicBytes, kNonceBytes);
  std::memcpy(challenge.mac.data(), bytes + kMagicBytes + kNonceBytes, kMacBytes);
  return challenge;
}

std::optional<Mac> decode_proof(const unsigned char* bytes, std::size_t size) {
  if (size != kProofBytes || !starts_with(bytes, kProofMagic)) return std::nullopt;
  Mac mac;
  std::memcpy(mac.data(), bytes + kMagicBytes, kMacBytes);
  return mac;
}

bool is_accept(const unsigned char* bytes, std::size_t size) {
  return size == kAcceptBytes && starts_with(bytes, kAcceptMagic);
}

Mac listener_mac(const Secret& secret, const Frame& hello, const Nonce& listener_nonce) {
  return transcript_mac(secret, kListenerLabel, sizeof kListenerLabel, hello, listener_nonce);
}

Mac connector_mac(const Secret& secret, const Frame& hello, const Nonce& listener_nonce) {
  return transcript_mac(secret, kConnectorLabel, sizeof kConnectorLabel, hello, listener_nonce);
}

ListenerHandshake::ListenerHandshake(const Secret& secret, std::uint32_t me, std::uint32_t world,
                                     const Nonce& nonce)
    : secret_(secret), me_(me), world_(world), nonce_(nonce) {}

std::size_t ListenerHandshake::needed() const {
  switch (state_) {
    case State::kHello:
      return kHelloBytes - buffer_.size();
    case State::kProof:
      return kProofBytes - buffer_.size();
    case State::kDone:
      return 0;
  }
  return 0;
}

ListenerHandshake::Step ListenerHandshake::take(const unsigned char* bytes, std::size_t size) {
  if (size == 0 || size > needed()) {
    throw InternalError(
        detail::concat("ListenerHandshake::take: ", size, " bytes given, ", needed(), " needed"));
  }
  const std::size_t had = buffer_.size();
  buffer_.resize(had + size);
  std::memcpy(buffer_.data() + had, bytes, size);
  // A stranger's bytes are refused as soon as their first eight are not our magic, rather
  // than after waiting for a whole hello that may never come.
  if (state_ == State::kHello && had < kMagicBytes && buffer_.size() >= kMagicBytes &&
      !starts_with(buffer_.data(), kHelloMagic)) {
    state_ = State::kDone;
    Step step;
    step.kind = Kind::kRefused;
    step.why = "not a reduce-verify handshake";
    return step;
  }
  if (needed() > 0) return Step{};
  return state_ == State::kHello ? on_hello() : on_proof();
}

ListenerHandshake::Step ListenerHandshake::on_hello() {
  Step step;
  step.kind = Kind::kRefused;
  state_ = State::kDone;
  const auto hello = decode_hello(buffer_.data(), buffer_.size());
  if (!hello) {
    step.why = "not a reduce-verify handshake";
    return step;
  }
  if (hello->world != world_ || hello->to != me_ || hello->from >= world_ || hello->from <= me_) {
    step.why = detail::concat("a hello from rank ", hello->from, " to rank ", hello->to,
                              " of a world of ", hello->world,
                              ", not to a higher rank's pair "
                              "with rank ",
                              me_, " of ", world_);
    return step;
  }
  from_ = hello->from;
  hello_ = buffer_;
  buffer_.clear();
  state_ = State::kProof;
  step.kind = Kind::kSend;
  step.reply = encode_challenge(Challenge{nonce_, listener_mac(secret_, hello_, nonce_)});
  return step;
}

ListenerHandshake::Step ListenerHandshake::on_proof() {
  Step step;
  step.kind = Kind::kRefused;
  state_ = State::kDone;
  const auto mac = decode_proof(buffer_.data(), buffer_.size());
  if (!mac) {
    step.why = detail::concat("claimed rank ", from_, " but sent no proof frame");
    return step;
  }
  if (!macs_equal(*mac, connector_mac(secret_, hello_, nonce_))) {
    step.why = detail::concat("claimed rank ", from_, " but could not prove membership");
    return step;
  }
  step.kind = Kind::kAccepted;
  step.rank = from_;
  step.reply = encode_accept();
  return step;
}

}  // namespace membership
}  // namespace rv
