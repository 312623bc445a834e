#include "datasync/store_lock.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <nlohmann/json.hpp>

#include "core/process_identity.h"
#include "core/random.h"
#include "core/sha256.h"
#include "core/units.h"

namespace cutover {
namespace {

int64_t SystemNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Conflicts(const std::string& mine, const std::string& theirs) {
  return mine == "gc" || theirs == "gc";
}

}  // namespace

LockInfo ParseLock(std::string_view key, std::string_view bytes) {
  LockInfo info;
  info.key = std::string(key);
  info.kind = "unknown";
  auto j = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return info;
  auto str = [&](const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto num = [&](const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{0};
  };
  std::string kind = str("kind");
  if (kind != "push" && kind != "gc") return info;
  info.kind = kind;
  info.host = str("host");
  info.pid = num("pid");
  info.start_ticks = static_cast<uint64_t>(std::max<int64_t>(0, num("start_ticks")));
  info.boot_id = str("boot_id");
  info.created_ns = num("created_ns");
  info.refreshed_ns = num("refreshed_ns");
  return info;
}

bool LockIsStale(const LockInfo& l, int64_t now_ns, std::chrono::nanoseconds stale_after,
                 std::string* why) {
  if (now_ns - l.refreshed_ns > stale_after.count()) return true;
  HolderVerdict v = JudgeHolder(ProcessIdentity{l.pid, l.start_ticks, l.boot_id, l.host});
  if (v.state != HolderState::kGone) return false;
  if (why != nullptr) {
    *why = "lock " + l.key + " of pid " + std::to_string(l.pid) + " on host " + l.host +
           " is stale: " + v.reason;
  }
  return true;
}

Result<std::vector<LockInfo>> ListLocks(Store& store) {
  std::vector<std::string> keys;
  CUTOVER_RETURN_IF_ERROR(store.List(kLocksPrefix, [&keys](std::string_view key, uint64_t) {
    keys.emplace_back(key);
    return Status::Ok();
  }));
  std::vector<LockInfo> out;
  for (const std::string& key : keys) {
    Result<std::string> bytes = store.Get(key);
    if (!bytes.ok()) {
      if (bytes.status().code() == Code::kNotFound) continue;  // released meanwhile
      return bytes.status();
    }
    out.push_back(ParseLock(key, *bytes));
  }
  return out;
}

StoreLock::StoreLock(Store& store, LockInfo info, LockOptions options)
    : store_(store), info_(std::move(info)), options_(std::move(options)) {}

int64_t StoreLock::Now() const { return options_.now_ns ? options_.now_ns() : SystemNowNs(); }

Status StoreLock::Write() {
  int64_t now = Now();
  nlohmann::json j = {{"kind", info_.kind},       {"host", info_.host},
                      {"pid", info_.pid},         {"start_ticks", info_.start_ticks},
                      {"boot_id", info_.boot_id}, {"created_ns", info_.created_ns},
                      {"refreshed_ns", now}};
  CUTOVER_RETURN_IF_ERROR(store_.Put(info_.key, j.dump()));
  std::lock_guard<std::mutex> l(mu_);
  last_written_ns_ = now;
  return Status::Ok();
}

Result<std::unique_ptr<StoreLock>> StoreLock::Acquire(Store& store, const std::string& kind,
                                                      const LockOptions& options) {
  if (kind != "push" && kind != "gc") {
    return Status::InvalidArgument("lock kind must be push or gc, not " + kind);
  }
  if (options.refresh_every <= std::chrono::nanoseconds(0) ||
      options.stale_after <= 2 * options.refresh_every) {
    return Status::InvalidArgument("a lock's stale_after must exceed twice its refresh interval");
  }
  LockInfo info;
  info.kind = kind;
  info.key = std::string(kLocksPrefix) + kind + "-" + RandomHex(8);
  const ProcessIdentity& self = SelfIdentity();
  info.host = self.host.empty() ? "unknown" : self.host;
  info.pid = self.pid;
  info.start_ticks = self.start_ticks;
  info.boot_id = self.boot_id;
  std::unique_ptr<StoreLock> lock(new StoreLock(store, info, options));
  lock->info_.created_ns = lock->Now();
  CUTOVER_RETURN_IF_ERROR(lock->Write());
  Result<std::vector<LockInfo>> others = ListLocks(store);
  if (!others.ok()) {
    (void)lock->Release();
    return others.status();
  }
  const int64_t now = lock->Now();
  for (const LockInfo& o : *others) {
    if (o.key == lock->info_.key) continue;
    int64_t age = now - o.refreshed_ns;
    if (!Conflicts(kind, o.kind)) continue;
    std::string why;
    if (LockIsStale(o, now, options.stale_after, &why)) {
      if (!why.empty() && options.on_gone) options.on_gone(why);
      continue;
    }
    (void)lock->Release();
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::nanoseconds(age));
    return Status::FailedPrecondition(
        "store " + store.Url() + " is locked by a running " + o.kind + " (" + o.key + " from " +
        o.host + " pid " + std::to_string(o.pid) + ", refreshed " +
        FormatDuration(std::chrono::duration_cast<std::chrono::milliseconds>(secs)) +
        " ago); retry once it ends, or delete the lock if that process is gone");
  }
  lock->refresher_ = std::thread([raw = lock.get()] { raw->RefreshLoop(); });
  return lock;
}

void StoreLock::RefreshLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    cv_.wait_for(l, options_.refresh_every, [this] { return stop_; });
    if (stop_) break;
    l.unlock();
    if (!Check().ok()) return;  // lost: refreshing now would revive a lock gc saw stale
    (void)Write();              // a failed refresh is retried next round
    l.lock();
  }
}

Status StoreLock::Check() const {
  std::lock_guard<std::mutex> l(mu_);
  if (Now() - last_written_ns_ > (options_.stale_after - options_.refresh_every).count()) {
    lost_ = true;
  }
  if (lost_) {
    return Status::FailedPrecondition("lost the store lock " + info_.key +
                                      ": it could not be refreshed in time, so another process "
                                      "may no longer respect it");
  }
  return Status::Ok();
}

Status StoreLock::Release() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (released_) return Status::Ok();
    released_ = true;
    stop_ = true;
  }
  cv_.notify_all();
  if (refresher_.joinable()) refresher_.join();
  return store_.Delete(info_.key);
}

StoreLock::~StoreLock() { (void)Release(); }

}  // namespace cutover
