// SHA-256 throughput: our wrapper (one-shot with a reused per-thread context, incremental,
// HMAC) next to OpenSSL's own one-shot EVP_Digest, which allocates a context per call.
// Compare with `openssl speed -evp sha256 -bytes 1048576 -seconds 2`.
#include <string>

#include <benchmark/benchmark.h>
#include <openssl/evp.h>

#include "core/sha256.h"

namespace cutover {
namespace {

std::string Buffer(size_t n) {
  std::string s(n, '\0');
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (char& c : s) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  return s;
}

void BM_Sha256Digest(benchmark::State& state) {
  const std::string data = Buffer(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(Sha256Digest(data));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Sha256Digest)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20);

// 1 MiB hashed in 64 KiB updates, as a file hasher does.
void BM_Sha256Incremental(benchmark::State& state) {
  const std::string data = Buffer(1 << 20);
  const size_t step = static_cast<size_t>(state.range(0));
  Sha256 h;
  for (auto _ : state) {
    for (size_t pos = 0; pos < data.size(); pos += step) h.Update(data.data() + pos, step);
    benchmark::DoNotOptimize(h.Final());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * (1 << 20));
}
BENCHMARK(BM_Sha256Incremental)->Arg(64 << 10);

void BM_OpenSslEvpDigest(benchmark::State& state) {
  const std::string data = Buffer(static_cast<size_t>(state.range(0)));
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  for (auto _ : state) {
    EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_OpenSslEvpDigest)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20);

void BM_HmacSha256(benchmark::State& state) {
  const std::string data = Buffer(static_cast<size_t>(state.range(0)));
  const std::string key(32, 'k');
  for (auto _ : state) benchmark::DoNotOptimize(HmacSha256(key, data));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_HmacSha256)->Arg(64 << 10)->Arg(1 << 20);

}  // namespace
}  // namespace cutover

BENCHMARK_MAIN();
