// Fuzzes the lock objects gc and push read from a store (anyone with write access to the store
// can put anything under locks/). No crash, and what is not a push or gc lock is "unknown" with
// no times, so it binds no one.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "datasync/store_lock.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  cutover::LockInfo l = cutover::ParseLock("locks/push-0", body);
  FUZZ_CHECK(l.key == "locks/push-0", "key changed");
  FUZZ_CHECK(l.kind == "push" || l.kind == "gc" || l.kind == "unknown", l.kind);
  if (l.kind == "unknown") {
    FUZZ_CHECK(l.refreshed_ns == 0 && l.created_ns == 0 && l.host.empty(), "unknown lock has data");
  }
  FUZZ_CHECK(l.host.size() <= size, "host longer than the input");
  return 0;
}
