// Push's first stage: the tree under a directory, listed through a FileSystem (core/
// file_system.h) depth first with each directory's names sorted bytewise (walk order,
// datasync/shard.h), as manifest entries. Stat only: no file is opened here.
//
//   TreeWalk walk(fs, "/data/set", {.shard = shard});
//   CUTOVER_RETURN_IF_ERROR(walk.Run([&](EntrySpool::Record r) { return spool->Write(r); }));
//
// Rules: a directory comes right before what it contains; symbolic links are recorded, never
// followed; a regular file gets its stat key (device, inode, size, mtime, ctime) for the files
// cache, `sparse` when it occupies fewer bytes than its size (holes), and `link` to the first
// path of its inode seen in this walk when it has several hard links; an entry removed while
// the tree is walked is left out; sockets, FIFOs and devices, and the directory `skip_dir`
// names (a file:// store inside the tree), are left out and listed in `skipped`. With a shard,
// every entry is walked and digested into `tree()`, but only the shard's own are emitted and
// counted.
//
// Thread-safety: one Run per TreeWalk.
#ifndef CUTOVER_DATASYNC_TREE_WALK_H_
#define CUTOVER_DATASYNC_TREE_WALK_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/file_system.h"
#include "core/status.h"
#include "datasync/entry_spool.h"
#include "datasync/shard.h"

namespace cutover {

struct TreeWalkOptions {
  std::optional<ShardSpec> shard;
  // (device, inode) of a directory to leave out, listed as "<path> (the store itself)".
  std::optional<std::pair<uint64_t, uint64_t>> skip_dir;
};

struct TreeWalkCounts {
  uint64_t files = 0, dirs = 0, symlinks = 0;
  uint64_t file_bytes = 0;           // the sizes of the emitted files
  std::vector<std::string> skipped;  // "path (socket)", "path (the store itself)"
};

class TreeWalk {
 public:
  // `root`: the directory, as an absolute path in `fs`.
  TreeWalk(const FileSystem& fs, std::string root, TreeWalkOptions options)
      : fs_(fs), root_(std::move(root)), options_(std::move(options)) {}

  // Emits this shard's entries in walk order (flags 0, no chunks yet). Stops at the first error
  // of `emit` or of the file system (IoError naming the path).
  Status Run(const std::function<Status(EntrySpool::Record)>& emit);

  const TreeWalkCounts& counts() const { return counts_; }
  TreeDigest& tree() { return tree_; }

 private:
  Status Walk(const std::string& rel, const std::function<Status(EntrySpool::Record)>& emit);

  const FileSystem& fs_;
  std::string root_;
  TreeWalkOptions options_;
  TreeWalkCounts counts_;
  TreeDigest tree_;  // every shard's entries
  // (device, inode) -> the first path of a file with several links.
  std::map<std::pair<uint64_t, uint64_t>, std::string> inodes_;
};

// "socket", "fifo", "character device", "block device" or "special file" for S_IFMT bits.
const char* SpecialFileKind(uint32_t format);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_TREE_WALK_H_
