// Test helper: where a push put a snapshot (every push publishes under a key of its own,
// datasync/snapshots.h).
#ifndef CUTOVER_TESTS_DATASYNC_SNAPSHOT_KEYS_H_
#define CUTOVER_TESTS_DATASYNC_SNAPSHOT_KEYS_H_

#include <string>

#include "datasync/snapshots.h"
#include "datasync/store.h"

namespace cutover::testing {

// The store key of the newest snapshot of `name`, or "none" when the series is empty (a key no
// Get finds).
inline std::string NewestKey(Store& store, const std::string& name) {
  Result<SnapshotRef> r = NewestSnapshot(store, name);
  return r.ok() ? r->key : "none";
}

}  // namespace cutover::testing

#endif  // CUTOVER_TESTS_DATASYNC_SNAPSHOT_KEYS_H_
