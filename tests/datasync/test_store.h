// One test store for datasync's unit tests: an in-memory store, or a wrapper around another
// (a FileStore, say), with a log of every call and hooks that make a call fail or change what
// it answers. Replaces the wrappers each test file used to write for itself.
//
//   TestStore store;                                     // in memory, "mem://test"
//   store.fail = [](std::string_view op, std::string_view key) -> std::optional<Status> {
//     if (op == "put" && key.starts_with("packs/")) return Status::Unavailable("503");
//     return std::nullopt;
//   };
//   ... push ...
//   EXPECT_EQ(store.Count("put", "chunks/"), 3);
//
// Thread-safety: every call may come from several threads (push's workers); set the hooks
// before use.
#ifndef CUTOVER_TESTS_DATASYNC_TEST_STORE_H_
#define CUTOVER_TESTS_DATASYNC_TEST_STORE_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "datasync/store.h"

namespace cutover {

class TestStore : public Store {
 public:
  // In memory.
  TestStore() = default;
  // Around `inner`, which must outlive this store.
  explicit TestStore(Store& inner) : inner_(&inner) {}
  // Around `inner`, which it owns.
  explicit TestStore(std::unique_ptr<Store> inner)
      : owned_(std::move(inner)), inner_(owned_.get()) {}

  // Called before each call with its op ("put", "get", "range", "head", "list", "delete") and
  // key (the prefix for "list"); a Status returned is the call's answer instead.
  std::function<std::optional<Status>(std::string_view op, std::string_view key)> fail;
  // Called with the bytes a "get" or "range" returns, to change them.
  std::function<void(std::string_view key, std::string* bytes)> after_get;
  // Called with each key a "list" would report; false hides it.
  std::function<bool(std::string_view key)> list_shows;

  std::string Url() const override { return inner_ != nullptr ? inner_->Url() : "mem://test"; }

  Status Put(std::string_view key, std::string_view bytes) override {
    if (auto f = Enter("put", key)) return *f;
    if (inner_ != nullptr) return inner_->Put(key, bytes);
    std::lock_guard<std::mutex> l(mu_);
    objects_[std::string(key)] = std::string(bytes);
    return Status::Ok();
  }

  Result<std::string> Get(std::string_view key) override {
    if (auto f = Enter("get", key)) return *f;
    Result<std::string> r = inner_ != nullptr ? inner_->Get(key) : Find(key);
    if (r.ok() && after_get) after_get(key, &*r);
    return r;
  }

  Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) override {
    if (auto f = Enter("range", key)) return *f;
    Result<std::string> r =
        inner_ != nullptr ? inner_->GetRange(key, offset, length) : Slice(key, offset, length);
    if (r.ok() && after_get) after_get(key, &*r);
    return r;
  }

  Result<uint64_t> Head(std::string_view key) override {
    if (auto f = Enter("head", key)) return *f;
    if (inner_ != nullptr) return inner_->Head(key);
    CUTOVER_ASSIGN_OR_RETURN(std::string all, Find(key));
    return static_cast<uint64_t>(all.size());
  }

  Status List(std::string_view prefix,
              const std::function<Status(std::string_view, uint64_t)>& fn) override {
    if (auto f = Enter("list", prefix)) return *f;
    auto shown = [&](std::string_view k, uint64_t size) -> Status {
      return !list_shows || list_shows(k) ? fn(k, size) : Status::Ok();
    };
    if (inner_ != nullptr) return inner_->List(prefix, shown);
    std::vector<std::pair<std::string, uint64_t>> listed;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto it = objects_.lower_bound(std::string(prefix));
           it != objects_.end() && it->first.starts_with(prefix); ++it) {
        listed.emplace_back(it->first, it->second.size());
      }
    }
    for (const auto& [k, size] : listed) CUTOVER_RETURN_IF_ERROR(shown(k, size));
    return Status::Ok();
  }

  Status Delete(std::string_view key) override {
    if (auto f = Enter("delete", key)) return *f;
    if (inner_ != nullptr) return inner_->Delete(key);
    std::lock_guard<std::mutex> l(mu_);
    objects_.erase(std::string(key));
    return Status::Ok();
  }

  const ObjectNames& Names() const override {
    return inner_ != nullptr ? inner_->Names() : Store::Names();
  }

  // Every call so far, "op key", in order.
  std::vector<std::string> calls() const {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
  }
  // Calls of `op` whose key starts with `prefix`.
  int Count(std::string_view op, std::string_view prefix = "") const {
    std::lock_guard<std::mutex> l(mu_);
    int n = 0;
    for (const std::string& c : calls_) {
      if (c.starts_with(std::string(op) + " " + std::string(prefix))) ++n;
    }
    return n;
  }
  void ClearCalls() {
    std::lock_guard<std::mutex> l(mu_);
    calls_.clear();
  }
  // The in-memory objects (empty around an inner store).
  std::map<std::string, std::string> objects() const {
    std::lock_guard<std::mutex> l(mu_);
    return objects_;
  }

 private:
  std::optional<Status> Enter(std::string_view op, std::string_view key) {
    {
      std::lock_guard<std::mutex> l(mu_);
      calls_.push_back(std::string(op) + " " + std::string(key));
    }
    return fail ? fail(op, key) : std::nullopt;
  }
  Result<std::string> Slice(std::string_view key, uint64_t offset, uint64_t length) const {
    CUTOVER_ASSIGN_OR_RETURN(std::string all, Find(key));
    if (offset + length > all.size()) {
      return Status::Corruption(std::string(key) + ": shorter than the range asked for");
    }
    return all.substr(offset, length);
  }
  Result<std::string> Find(std::string_view key) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = objects_.find(std::string(key));
    if (it == objects_.end()) return Status::NotFound(std::string(key) + ": no such object");
    return it->second;
  }

  std::unique_ptr<Store> owned_;
  Store* inner_ = nullptr;
  mutable std::mutex mu_;
  std::map<std::string, std::string> objects_;
  std::vector<std::string> calls_;
};

}  // namespace cutover

#endif  // CUTOVER_TESTS_DATASYNC_TEST_STORE_H_
