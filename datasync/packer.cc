#include "datasync/packer.h"

#include <cstring>
#include <memory>

#include "core/failpoint.h"
#include "datasync/hash.h"

namespace cutover {

Status Packer::LoadPrevious(const std::string& snapshot_key) {
  auto bytes = store_.Get(snapshot_key);
  if (!bytes.ok()) {
    return bytes.status().code() == Code::kNotFound ? Status::Ok() : bytes.status();
  }
  auto m = DecodeManifest(*bytes);
  if (!m.ok()) return Status::Ok();  // a broken old manifest only costs dedup
  for (const Entry& e : m->entries) {
    for (const ChunkRef& c : e.chunks) {
      if (c.packed) previous_[c.id] = c;
    }
  }
  return Status::Ok();
}

Status Packer::Place(ChunkRef* ref, const std::string& path,
                     const std::function<Result<std::string>()>& read, TaskPool& pool,
                     bool* pending) {
  *pending = false;
  auto prev = previous_.find(ref->id);
  if (prev != previous_.end()) {
    CUTOVER_ASSIGN_OR_RETURN(bool have,
                             writer_.Present(store_.Names().Pack(prev->second.pack),
                                             prev->second.pack_offset + prev->second.length,
                                             /*exact=*/false));
    if (have) {
      *ref = prev->second;
      if (on_confirmed_) on_confirmed_(ref->length);
      return Status::Ok();
    }
  }
  auto cur = in_pack_.find(ref->id);
  if (cur == in_pack_.end()) {
    CUTOVER_ASSIGN_OR_RETURN(std::string bytes, read());
    if (bytes.size() != ref->length || Sha256Of(bytes) != ref->id) {
      return Status::IoError("file changed while being read: " + path);
    }
    if (pack_.size() + bytes.size() > params_.max_size || in_pack_.size() == kMaxPackMembers) {
      CUTOVER_RETURN_IF_ERROR(Flush(pool));
    }
    cur = in_pack_.emplace(ref->id, pack_.size()).first;
    pack_ += bytes;
  }
  ref->packed = true;
  ref->pack = ChunkId{};
  const uint64_t number = pack_ids_.size();  // the number the current pack will get
  std::memcpy(ref->pack.data(), &number, sizeof number);
  ref->pack_offset = cur->second;
  *pending = true;
  pack_file_bytes_ += ref->length;
  return Status::Ok();
}

Status Packer::Flush(TaskPool& pool) {
  if (pack_.empty()) return Status::Ok();
  const ChunkId pack_id = Sha256Of(pack_);
  pack_ids_.push_back(pack_id);
  std::string key = store_.Names().Pack(pack_id);
  auto bytes = std::make_shared<std::string>(std::move(pack_));
  pool.Submit([this, key, bytes, file_bytes = pack_file_bytes_]() -> Status {
    CUTOVER_RETURN_IF_ERROR(writer_.Upload(key, *bytes));
    CUTOVER_FAILPOINT("push.pack_put.after");
    if (on_confirmed_) on_confirmed_(file_bytes);
    return Status::Ok();
  });
  pack_file_bytes_ = 0;
  in_pack_.clear();
  pack_.clear();
  return Status::Ok();
}

Status Packer::Resolve(ChunkRef* ref) const {
  uint64_t number = 0;
  std::memcpy(&number, ref->pack.data(), sizeof number);
  if (number >= pack_ids_.size()) return Status::Internal("push: pack number out of range");
  ref->pack = pack_ids_[number];
  return Status::Ok();
}

}  // namespace cutover
