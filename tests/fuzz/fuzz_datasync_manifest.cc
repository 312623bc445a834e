// Fuzzes the snapshot manifest decoder (zstd + JSON from the store, read as a stream): no crash; a
// manifest it accepts re-encodes, and decoding that gives the same encoding again (nothing is lost
// or invented between decode and encode). Inputs are tried both as they are and zstd-compressed, so
// the fuzzer reaches the JSON layer too.
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "datasync/manifest.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void Check(std::string_view bytes) {
  auto m = cutover::DecodeManifest(bytes);
  if (!m.ok()) {
    FUZZ_CHECK(!m.status().message().empty(), "an error without a message");
    return;
  }
  // The streaming reader (what ls uses) accepts it too and hands over every entry.
  size_t streamed = 0;
  auto header = cutover::ReadManifest(bytes, [&streamed](cutover::Entry&&) {
    ++streamed;
    return cutover::Status::Ok();
  });
  FUZZ_CHECK(header.ok() && streamed == m->entries.size(), "the streaming reader disagrees");
  auto once = cutover::EncodeManifest(*m);
  FUZZ_CHECK(once.ok(), once.status().ToString());
  auto again = cutover::DecodeManifest(*once);
  FUZZ_CHECK(again.ok(), again.status().ToString());
  auto twice = cutover::EncodeManifest(*again);
  FUZZ_CHECK(twice.ok() && *twice == *once, "re-encoding differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  Check(raw);
  std::string packed(ZSTD_compressBound(size), '\0');
  size_t n = ZSTD_compress(packed.data(), packed.size(), data, size, 1);
  if (!ZSTD_isError(n)) Check(std::string_view(packed.data(), n));
  return 0;
}
