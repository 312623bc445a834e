// Push's third stage: content-addressed objects (chunks and packs) made present in the store
// whole, each at most once per run, with what is known about the store kept in one place: what
// this run saw (a Put that returned, a Head and its size), what the journal of the local state
// says, and whether the store was created by this push (then it held nothing before).
//
//   ObjectWriter writer(store, {.state = state, .store_was_empty = created});
//   CUTOVER_RETURN_IF_ERROR(writer.Upload(store.Names().Chunk(id), bytes));
//
// Rules: an object is put only when the store lacks it whole (a Head of another size is a
// truncated object or a partial body: it is put again); a Put that returned is the store's
// confirmation (no Head after it); every confirmation is journaled at once (so a resumed push
// skips it); with `dry_run` nothing is put or journaled, and the counts say what would be sent.
//
// Thread-safety: every method may be called from several worker threads at once.
#ifndef CUTOVER_DATASYNC_OBJECT_WRITER_H_
#define CUTOVER_DATASYNC_OBJECT_WRITER_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/status.h"
#include "datasync/state.h"
#include "datasync/store.h"

namespace cutover {

struct ObjectWriterOptions {
  DatasyncState* state = nullptr;  // the journal; null: none
  bool trust_journal = true;       // false: the journal predates the store's last gc
  bool store_was_empty = false;    // this push created the store: nothing to ask it about
  bool dry_run = false;
};

class ObjectWriter {
 public:
  ObjectWriter(Store& store, ObjectWriterOptions options)
      : store_(store), url_(store.Url()), o_(options) {}

  // True when the store holds `key` whole: seen whole in this run (put, or a Head whose size is
  // `size`, or at least `size` when `exact` is false: a pack read in part), or journaled and not
  // disproved since (a verify or pull drops what it finds missing or corrupt). An object of
  // another size seen this run is not there: it is put again, whole.
  Result<bool> Present(const std::string& key, uint64_t size, bool exact);

  // Makes sure the store holds `bytes` under the content-addressed `key` (once per run: a key
  // another worker already took is left to it).
  Status Upload(const std::string& key, std::string_view bytes);

  uint64_t uploaded_objects() const { return uploaded_objects_.load(); }
  uint64_t uploaded_bytes() const { return uploaded_bytes_.load(); }
  uint64_t journal_hits() const { return journal_hits_.load(); }

 private:
  // Remembers that the store holds `key` with `size` bytes (kJournaled: the journal says whole).
  void MarkConfirmed(const std::string& key, uint64_t size);

  static constexpr uint64_t kJournaled = UINT64_MAX;
  Store& store_;
  const std::string url_;
  const ObjectWriterOptions o_;
  std::mutex mu_;
  std::unordered_map<std::string, uint64_t> confirmed_;  // key -> size seen (guarded by mu_)
  std::unordered_set<std::string> claimed_;              // keys some worker puts (guarded by mu_)
  std::atomic<uint64_t> uploaded_objects_{0}, uploaded_bytes_{0}, journal_hits_{0};
};

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_OBJECT_WRITER_H_
