#include "datasync/rate_limited_store.h"

#include <utility>

namespace cutover {
namespace {

class RateLimitedStore : public Store {
 public:
  RateLimitedStore(std::unique_ptr<Store> inner, std::shared_ptr<RateLimiter> limiter)
      : inner_(std::move(inner)), limiter_(std::move(limiter)) {}

  std::string Url() const override { return inner_->Url(); }
  Status Put(std::string_view key, std::string_view bytes) override {
    limiter_->Acquire(bytes.size());
    return inner_->Put(key, bytes);
  }
  Result<std::string> Get(std::string_view key) override {
    Result<std::string> r = inner_->Get(key);
    if (r.ok()) limiter_->Acquire(r->size());
    return r;
  }
  Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) override {
    Result<std::string> r = inner_->GetRange(key, offset, length);
    if (r.ok()) limiter_->Acquire(r->size());
    return r;
  }
  Result<uint64_t> Head(std::string_view key) override { return inner_->Head(key); }
  Status List(std::string_view prefix,
              const std::function<Status(std::string_view, uint64_t)>& fn) override {
    return inner_->List(prefix, fn);
  }
  Status Delete(std::string_view key) override { return inner_->Delete(key); }
  Result<uint64_t> RemoveLeftovers(int64_t before_ns) override {
    return inner_->RemoveLeftovers(before_ns);
  }
  const ObjectNames& Names() const override { return inner_->Names(); }
  const StoreEncryption* Encryption() const override { return inner_->Encryption(); }

 private:
  std::unique_ptr<Store> inner_;
  std::shared_ptr<RateLimiter> limiter_;
};

}  // namespace

std::unique_ptr<Store> RateLimitStore(std::unique_ptr<Store> inner,
                                      std::shared_ptr<RateLimiter> limiter) {
  return std::make_unique<RateLimitedStore>(std::move(inner), std::move(limiter));
}

}  // namespace cutover
