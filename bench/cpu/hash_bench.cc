// XXH3-128 digests of arenas (core/digest/digest.h), in bytes/s: what every check and run line
// pays once per reduced arena.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "core/digest/digest.h"

namespace rv {
namespace {

void BM_Xxh3Digest(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<unsigned char> data(bytes);
  for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<unsigned char>(i * 131 + 7);
  for (auto _ : state) benchmark::DoNotOptimize(digest_bytes(data.data(), data.size()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_Xxh3Digest)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20);

// Streaming in the 16 Ki-element blocks of the reference re-derivation.
void BM_Xxh3Stream(benchmark::State& state) {
  const std::size_t bytes = std::size_t{64} << 20;
  const std::size_t block = std::size_t{64} << 10;
  std::vector<unsigned char> data(bytes, 0x5A);
  for (auto _ : state) {
    DigestStream stream;
    for (std::size_t at = 0; at < bytes; at += block) stream.update(data.data() + at, block);
    benchmark::DoNotOptimize(stream.finish());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_Xxh3Stream);

}  // namespace
}  // namespace rv
