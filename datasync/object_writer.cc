#include "datasync/object_writer.h"

#include "core/failpoint.h"

namespace cutover {

Result<bool> ObjectWriter::Present(const std::string& key, uint64_t size, bool exact) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto seen = confirmed_.find(key);
    if (seen != confirmed_.end()) {
      if (seen->second == kJournaled || (exact ? seen->second == size : seen->second >= size)) {
        return true;
      }
      // Seen with another size: a chunk is put again, a pack member past its end repacked.
      return false;
    }
  }
  if (o_.state != nullptr && o_.trust_journal) {
    CUTOVER_ASSIGN_OR_RETURN(bool journaled, o_.state->IsConfirmed(url_, key));
    if (journaled) {
      ++journal_hits_;
      MarkConfirmed(key, kJournaled);
      return true;
    }
  }
  if (o_.store_was_empty) return false;
  Result<uint64_t> stored = store_.Head(key);
  if (!stored.ok() && stored.status().code() != Code::kNotFound) return stored.status();
  if (stored.ok()) MarkConfirmed(key, *stored);  // its size, for later checks of this key
  const bool have = stored.ok() && (exact ? *stored == size : *stored >= size);
  if (have && o_.state != nullptr && !o_.dry_run) {
    CUTOVER_RETURN_IF_ERROR(o_.state->RecordConfirmed(url_, key));
  }
  return have;
}

void ObjectWriter::MarkConfirmed(const std::string& key, uint64_t size) {
  std::lock_guard<std::mutex> l(mu_);
  confirmed_[key] = size;
}

Status ObjectWriter::Upload(const std::string& key, std::string_view bytes) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!claimed_.insert(key).second) return Status::Ok();  // another worker has it
  }
  CUTOVER_ASSIGN_OR_RETURN(bool have, Present(key, bytes.size(), /*exact=*/true));
  if (have) return Status::Ok();
  if (!o_.dry_run) {
    // Put returning OK is the store's confirmation (Store::Put: durable once it returns); no
    // HEAD after it, which cost one request per object.
    CUTOVER_RETURN_IF_ERROR(store_.Put(key, bytes));
    CUTOVER_FAILPOINT("push.chunk_put.after");
    if (o_.state != nullptr) CUTOVER_RETURN_IF_ERROR(o_.state->RecordConfirmed(url_, key));
    MarkConfirmed(key, bytes.size());
  }
  ++uploaded_objects_;
  uploaded_bytes_ += bytes.size();
  return Status::Ok();
}

}  // namespace cutover
