// libFuzzer target: the membership handshake's frame reader (docs/DESIGN.md §10), i.e. what
// a rank's listener does with the bytes of any connection before Gloo sees it. The input's
// first byte picks how the rest is cut into reads (1..64 bytes each) and whether the
// fuzzer's hello is followed by the proof a member would compute (so that the accepting
// path is reached too). Properties, any violation an abort:
//   - the state machine never asks for more than a frame, never throws, and ends refused
//     or accepted after at most a hello and a proof;
//   - it accepts only a hello to rank 0 of a world of 4 from a rank above 0, followed by
//     the proof computed with the secret over that hello and the challenge's nonce;
//   - every decoder accepts only what re-encodes to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/transport/membership/handshake_frames.h"

namespace {

using namespace rv::membership;

void check_decoders(const std::uint8_t* data, std::size_t size) {
  for (std::size_t length : {kHelloBytes, kChallengeBytes, kProofBytes, kAcceptBytes}) {
    if (size < length) continue;
    if (const auto hello = decode_hello(data, length)) {
      if (length != kHelloBytes || encode_hello(*hello) != Frame(data, data + length)) std::abort();
    }
    if (const auto challenge = decode_challenge(data, length)) {
      if (encode_challenge(*challenge) != Frame(data, data + length)) std::abort();
    }
    if (const auto mac = decode_proof(data, length)) {
      if (encode_proof(*mac) != Frame(data, data + length)) std::abort();
    }
    if (is_accept(data, length) && encode_accept() != Frame(data, data + length)) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned cut = (data[0] & 0x3f) + 1;
  const bool answer_as_member = (data[0] & 0x40) != 0;
  const std::uint8_t* bytes = data + 1;
  const std::size_t count = size - 1;
  check_decoders(bytes, count);

  Secret secret{};
  for (std::size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<unsigned char>(i * 7);
  Nonce nonce{};
  nonce[0] = 1;
  ListenerHandshake listener(secret, 0, 4, nonce);

  std::vector<std::uint8_t> stream(bytes, bytes + count);
  if (answer_as_member && count >= kHelloBytes) {
    // What a member sends after this hello: its proof over the hello and our nonce.
    stream.resize(kHelloBytes);
    const Frame hello(bytes, bytes + kHelloBytes);
    const Frame proof = encode_proof(connector_mac(secret, hello, nonce));
    stream.insert(stream.end(), proof.begin(), proof.end());
  }

  std::size_t at = 0;
  int frames = 0;
  ListenerHandshake::Step step;
  while (at < stream.size() && listener.needed() > 0) {
    const std::size_t need = listener.needed();
    if (need > kHelloBytes) std::abort();
    std::size_t take = cut < need ? cut : need;
    if (take > stream.size() - at) take = stream.size() - at;
    step = listener.take(stream.data() + at, take);
    at += take;
    if (step.kind == ListenerHandshake::Kind::kSend) {
      ++frames;
      const auto challenge = decode_challenge(step.reply.data(), step.reply.size());
      if (!challenge || challenge->nonce != nonce) std::abort();
    }
    if (step.kind == ListenerHandshake::Kind::kRefused && step.why.empty()) std::abort();
    if (step.kind == ListenerHandshake::Kind::kAccepted) {
      const auto hello = decode_hello(stream.data(), kHelloBytes);
      const Frame hello_frame(stream.begin(), stream.begin() + kHelloBytes);
      const auto proof = decode_proof(stream.data() + kHelloBytes, kProofBytes);
      if (!hello || hello->to != 0 || hello->world != 4 || hello->from == 0 || hello->from >= 4 ||
          step.rank != hello->from || !proof ||
          !macs_equal(*proof, connector_mac(secret, hello_frame, nonce)) ||
          !is_accept(step.reply.data(), step.reply.size()) || frames != 1) {
        std::abort();
      }
    }
  }
  if (listener.needed() == 0 && step.kind != ListenerHandshake::Kind::kRefused &&
      step.kind != ListenerHandshake::Kind::kAccepted) {
    std::abort();
  }
  return 0;
}
