// Fuzzes the --encrypt key file parser (EncryptionKey::Parse). No crash; a key only from exactly
// 32 bytes (not all zero) or 64 hex digits with an optional newline; a 32-hex-digit key check;
// and messages that are fixed texts, never any part of the file (a key must never reach a
// log).
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "datasync/encrypted_store.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto key = cutover::EncryptionKey::Parse(body, "KEYFILE");
  std::string_view hex = body;
  if (hex.size() == 65 && hex.back() == '\n') hex.remove_suffix(1);
  bool all_hex = hex.size() == 64;
  for (char c : hex) all_hex = all_hex && std::isxdigit(static_cast<unsigned char>(c));
  bool zero = true;
  for (char c : body) zero = zero && c == (size == 32 ? '\0' : '0');
  if (hex.size() == 64 && all_hex) {
    zero = hex.find_first_not_of('0') == std::string_view::npos;
  }
  const bool valid = ((size == 32) || (hex.size() == 64 && all_hex)) && !zero;
  FUZZ_CHECK(key.ok() == valid, key.ok() ? "accepted" : key.status().message());
  if (key.ok()) {
    FUZZ_CHECK(key->key_check().size() == 32, key->key_check());
    FUZZ_CHECK(key->key_check().find_first_not_of("0123456789abcdef") == std::string::npos,
               key->key_check());
    FUZZ_CHECK(key->file() == "KEYFILE", key->file());
  } else {
    // The message is one of three fixed texts, told apart by the size alone: it cannot echo
    // the file's content.
    const std::string m = key.status().message();
    const std::string make = "make one with: head -c 32 /dev/urandom > FILE)";
    const std::string sized = "--encrypt KEYFILE: not a key: " + std::to_string(size) +
                              " bytes (expected 32 random bytes or 64 hex digits; " + make;
    const std::string not_hex =
        "--encrypt KEYFILE: not a key: 64 characters, but not all hex digits (expected 32 "
        "random bytes or 64 hex digits)";
    const std::string zeros = "--encrypt KEYFILE: not a key: all zero bytes (" + make;
    FUZZ_CHECK(m == sized || m == not_hex || m == zeros, m);
  }
  return 0;
}
