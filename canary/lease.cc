#include "canary/lease.h"

#include <chrono>

#include "canary/state.h"
#include "core/log.h"

namespace cutover::canary {

double LeaseNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

LeaseKeeper::LeaseKeeper(std::string db_path, std::string name, int64_t generation,
                         double beat_seconds)
    : db_path_(std::move(db_path)),
      name_(std::move(name)),
      generation_(generation),
      beat_seconds_(beat_seconds),
      thread_([this] { Loop(); }) {}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::string LeaseKeeper::lost_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_reason_;
}

void LeaseKeeper::Loop() {
  Result<RolloutStore> store = RolloutStore::Open(db_path_);
  if (!store.ok()) {
    CUTOVER_LOG(kWarn) << "canary " << name_ << ": lease heartbeat: " << store.status().ToString();
  }
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::duration<double>(beat_seconds_), [this] { return stop_; });
    if (stop_) break;
    if (!store.ok()) {
      store = RolloutStore::Open(db_path_);
      if (!store.ok()) continue;
    }
    lock.unlock();
    Status s = store->BeatLease(name_, generation_, LeaseNow());
    lock.lock();
    if (s.code() == Code::kAborted) {
      lost_reason_ = s.message();
      lost_.store(true);
      CUTOVER_LOG(kError) << "canary " << name_ << ": " << s.message();
      return;
    }
    if (!s.ok()) {
      CUTOVER_LOG(kWarn) << "canary " << name_ << ": lease heartbeat: " << s.ToString();
    }
  }
}

}  // namespace cutover::canary
