// What a directory holds beyond a snapshot: the entries of DEST whose paths the snapshot does not
// name, for `verify --allow-extra` (reported otherwise) and `pull --delete` (removed).
//
// Rules: DEST is walked through directory descriptors (openat with O_NOFOLLOW): a symlink is an
// entry like any other, never followed, so nothing outside DEST is ever listed or removed; a
// directory the snapshot does not name is one extra entry, with everything below it.
//
// Thread-safety: plain functions over the file system.
#ifndef CUTOVER_DATASYNC_EXTRAS_H_
#define CUTOVER_DATASYNC_EXTRAS_H_

#include <functional>
#include <string>

#include "core/status.h"

namespace cutover {

// Calls `fn(path, is_dir)` for each entry under `dest` (relative path) that `named(path)` is
// false for, and does not descend into it; in walk order. `remove`: each such entry is also
// removed (a directory with all it holds) once `fn` has seen it. IoError naming the path when
// DEST or a directory in it cannot be read or an entry cannot be removed.
Status ForEachExtra(const std::string& dest, const std::function<bool(const std::string&)>& named,
                    const std::function<void(const std::string& path, bool is_dir)>& fn,
                    bool remove);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_EXTRAS_H_
