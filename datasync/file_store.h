// FileStore: a Store in a local (or network-mounted) directory, URL file:///abs/path.
//
// An object is the file <root>/<key>. Put writes a temporary file next to the final one (a name
// starting with '.', which no key may have, so List never shows it), fsyncs it, renames it over
// the final name and fsyncs the directory: after a crash a key holds its old bytes or its new
// bytes, never a part. Leftover temporaries of a crashed Put are invisible and harmless, and gc
// removes them after its grace period (RemoveLeftovers). Failpoints: "file_store.put.before_rename"
// (the temporary is written and fsynced) and "file_store.put.after_rename".
//
// Thread-safety: all methods may be called concurrently; distinct Puts to one key race like two
// renames (one of the complete objects wins).
#ifndef CUTOVER_DATASYNC_FILE_STORE_H_
#define CUTOVER_DATASYNC_FILE_STORE_H_

#include <memory>
#include <string>

#include "datasync/store.h"

namespace cutover {

class FileStore : public Store {
 public:
  // `url` is file:///abs/path. Creates nothing: a missing directory is an empty store, made by
  // the first Put. InvalidArgument for a relative or malformed URL, or a path that is not a
  // directory.
  static Result<std::unique_ptr<FileStore>> Open(std::string_view url);

  std::string Url() const override { return "file://" + root_; }
  const std::string& root() const { return root_; }

  Status Put(std::string_view key, std::string_view bytes) override;
  Result<std::string> Get(std::string_view key) override;
  Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) override;
  Result<uint64_t> Head(std::string_view key) override;
  Status List(std::string_view prefix,
              const std::function<Status(std::string_view key, uint64_t size)>& fn) override;
  Status Delete(std::string_view key) override;
  // Removes the temporaries of killed Puts (".<name>.tmp.<pid>.<n>" anywhere under the root)
  // last modified before `before_ns`; a Put still writing one refreshes its mtime with each
  // write, and gc passes now minus its grace period.
  Result<uint64_t> RemoveLeftovers(int64_t before_ns) override;

 private:
  explicit FileStore(std::string root) : root_(std::move(root)) {}
  std::string PathOf(std::string_view key) const { return root_ + "/" + std::string(key); }
  // Corruption when something other than a regular file (a directory) is at `key`'s path; OK
  // when it is a file or absent (the read that follows says so).
  Status CheckRegular(std::string_view key) const;

  std::string root_;  // absolute, no trailing '/'
};

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_FILE_STORE_H_
