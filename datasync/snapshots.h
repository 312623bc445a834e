// Snapshot series: every push publishes a new snapshot under its own immutable id, and a name is
// the series of the snapshots pushed under it, newest last (as restic does). Nothing overwrites a
// snapshot, so two pushes to one name at once both land; `forget` removes snapshots and `gc`
// then reclaims what only they used.
//
// Keys (datasync/store.h):
//   snap/<name>/<created_ns, 20 digits>-<id>   a snapshot; the key alone gives name, time and id,
//                                               so a listing needs no manifest read
//   snapshots/<name>                           a snapshot written before ids (one per name, each
//                                               push replaced it); read as its series' member
//                                               with id LegacySnapshotId(name) and the time its
//                                               manifest holds
// An id is 16 hex digits, random for a new snapshot. A command takes an id or any unique prefix
// of at least 4 digits.
//
// Thread-safety: pure functions, and functions over a Store (which must allow concurrent calls).
#ifndef CUTOVER_DATASYNC_SNAPSHOTS_H_
#define CUTOVER_DATASYNC_SNAPSHOTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "datasync/store.h"

namespace cutover {

inline constexpr char kSeriesPrefix[] = "snap/";

// One snapshot of a store.
struct SnapshotRef {
  std::string id;  // 16 hex digits
  std::string name;
  int64_t created_ns = 0;  // when its push started
  std::string key;         // its manifest's store key
  bool legacy = false;     // snapshots/<name>, written before ids

  bool operator==(const SnapshotRef&) const = default;
};

// Which snapshot a command reads: the newest of a name's series, or one id (or unique prefix).
// Converts from a name, so Pull(store, "nightly", ...) reads the newest "nightly".
struct SnapshotSelector {
  SnapshotSelector(std::string n) : name(std::move(n)) {}  // NOLINT: a name is a selector
  SnapshotSelector(const char* n) : name(n) {}             // NOLINT
  static SnapshotSelector Id(std::string id);

  std::string name;
  std::string id;

  // "nightly" or "id 3fa2c0de".
  std::string Label() const;
};

// A fresh random id: 16 hex digits.
std::string NewSnapshotId();

// The id a snapshot written before ids is known by: the first 16 hex digits of the SHA-256 of
// "legacy-snapshot:" and its name. Stable, so scripts can keep it.
std::string LegacySnapshotId(std::string_view name);

// "snap/<name>/<created_ns zero-padded to 20 digits>-<id>". InvalidArgument for a bad name (as
// SnapshotKey), a negative time or an id that is not 16 hex digits.
Result<std::string> SeriesKey(std::string_view name, int64_t created_ns, std::string_view id);

// The name, time and id a series key holds; nullopt for any other key.
std::optional<SnapshotRef> ParseSeriesKey(std::string_view key);

// Every snapshot of the store (of `name` only when set), oldest first within a name, names in
// byte order. A legacy snapshot's manifest is read for its time (its header only matters, but
// the stream is read through) unless `legacy_times` is false: then its created_ns is 0 and the
// caller, which reads the manifests anyway (ls), fills it in and sorts with OldestFirst. One that
// cannot be read is an error naming its key.
Result<std::vector<SnapshotRef>> ListSnapshots(Store& store,
                                               const std::optional<std::string>& name,
                                               bool legacy_times = true);

// Names in byte order, each name's snapshots oldest first (ties by id: a total order).
bool OldestFirst(const SnapshotRef& a, const SnapshotRef& b);

// The newest snapshot of `name`; NotFound "no snapshot NAME in URL" when the series is empty.
Result<SnapshotRef> NewestSnapshot(Store& store, std::string_view name);

// The snapshot with id `id` or with the only id starting with it. InvalidArgument for fewer than
// 4 or non-hex digits, or a prefix that several ids share; NotFound "no snapshot with id ID in
// URL".
Result<SnapshotRef> FindSnapshot(Store& store, std::string_view id);

// NewestSnapshot or FindSnapshot, as `selector` asks.
Result<SnapshotRef> ResolveSnapshot(Store& store, const SnapshotSelector& selector);

// The snapshots `forget --name NAME --keep-last K` removes: all of the series but its K newest,
// oldest first (empty when the series holds K or fewer). InvalidArgument for K < 1.
Result<std::vector<SnapshotRef>> SnapshotsBeyondLast(Store& store, std::string_view name,
                                                     int keep_last);

// What changed from snapshot `from` to snapshot `to`, path by path, each list in walk order.
struct SnapshotDiff {
  std::vector<std::string> added;     // in `to` only
  std::vector<std::string> removed;   // in `from` only
  std::vector<std::string> changed;   // another type, other bytes (chunk list) or symlink target
  std::vector<std::string> metadata;  // the same content, another mode or mtime
};

// Reads `from` into a table of paths and streams `to` past it (memory: one entry's worth per
// path of `from`, not its chunk lists). InvalidArgument for a manifest that cannot be read.
Result<SnapshotDiff> DiffSnapshots(Store& store, const SnapshotRef& from, const SnapshotRef& to);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_SNAPSHOTS_H_
