// Fuzzes the snapshot key parser (datasync/snapshots.h), which reads the keys a store lists, and
// the id-prefix check: no crash; a key it accepts is exactly the key SeriesKey builds from what
// it read (nothing lost or invented), with a 16-digit id and a name the store accepts.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "datasync/snapshots.h"
#include "datasync/store.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view key(reinterpret_cast<const char*>(data), size);
  std::optional<cutover::SnapshotRef> ref = cutover::ParseSeriesKey(key);
  if (!ref) return 0;
  FUZZ_CHECK(ref->id.size() == 16, "an id that is not 16 digits");
  FUZZ_CHECK(ref->created_ns >= 0, "a time before 1970");
  FUZZ_CHECK(ref->key == key, "the ref names another key");
  FUZZ_CHECK(cutover::ValidateKey(key).ok(), "accepted a key the store refuses");
  cutover::Result<std::string> again = cutover::SeriesKey(ref->name, ref->created_ns, ref->id);
  FUZZ_CHECK(again.ok(), "a parsed key does not rebuild");
  FUZZ_CHECK(*again == key, "the rebuilt key differs");
  return 0;
}
