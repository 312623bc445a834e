// datasync check against a directory store, and against stores that refuse one thing each.
#include "datasync/check.h"

#include <gtest/gtest.h>

#include "datasync/file_store.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

// A FileStore that refuses one operation with a permission error, or answers it wrongly.
class RefusingStore : public Store {
 public:
  enum class Refuse { kNothing, kDelete, kPut, kRange, kGetCorrupt, kListHidesNew };
  RefusingStore(std::unique_ptr<FileStore> inner, Refuse refuse)
      : inner_(std::move(inner)), refuse_(refuse) {}
  std::string Url() const override { return inner_->Url(); }
  Status Put(std::string_view key, std::string_view bytes) override {
    if (refuse_ == Refuse::kPut)
      return Status::FailedPrecondition("PUT " + std::string(key) +
                                        ": permission denied (403 AccessDenied)");
    return inner_->Put(key, bytes);
  }
  Result<std::string> Get(std::string_view key) override {
    auto r = inner_->Get(key);
    if (refuse_ == Refuse::kGetCorrupt && r.ok() && key.starts_with("check/")) (*r)[0] ^= 1;
    return r;
  }
  Result<std::string> GetRange(std::string_view key, uint64_t off, uint64_t len) override {
    if (refuse_ == Refuse::kRange) return Status::Unimplemented("ranged GET: 501");
    return inner_->GetRange(key, off, len);
  }
  Result<uint64_t> Head(std::string_view key) override { return inner_->Head(key); }
  Status List(std::string_view prefix,
              const std::function<Status(std::string_view, uint64_t)>& fn) override {
    if (refuse_ == Refuse::kListHidesNew && prefix == "check/") return Status::Ok();
    return inner_->List(prefix, fn);
  }
  Status Delete(std::string_view key) override {
    if (refuse_ == Refuse::kDelete)
      return Status::FailedPrecondition("DELETE " + std::string(key) +
                                        ": permission denied (403 AccessDenied)");
    return inner_->Delete(key);
  }

 private:
  std::unique_ptr<FileStore> inner_;
  Refuse refuse_;
};

class CheckTest : public ::testing::Test {
 protected:
  std::unique_ptr<RefusingStore> Store(RefusingStore::Refuse r) {
    auto fs = FileStore::Open("file://" + dir_.Join("store"));
    EXPECT_TRUE(fs.ok());
    return std::make_unique<RefusingStore>(std::move(*fs), r);
  }
  static std::string Results(const CheckResult& r) {
    std::string s;
    for (const auto& st : r.steps) s += st.name + "=" + st.result + " ";
    return s;
  }
  CheckOptions Options() const {
    CheckOptions o;
    o.sample_bytes = 100000;
    o.seed = 42;
    return o;
  }
  cutover::testing::TempDir dir_;
};

TEST_F(CheckTest, AWorkingStorePassesEveryStepAndKeepsNothing) {
  auto store = Store(RefusingStore::Refuse::kNothing);
  ASSERT_TRUE(store->Put("snapshots/a", "x").ok());
  ASSERT_TRUE(store->Put("config", "{}").ok());
  auto r = CheckStore(*store, Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->ok) << Results(*r);
  EXPECT_EQ(Results(*r), "list=ok config=ok put=ok head=ok get=ok range=ok listed=ok delete=ok ");
  EXPECT_EQ(r->snapshots, 1u);
  EXPECT_TRUE(r->config_present);
  ASSERT_TRUE(r->latency_ms.has_value());
  EXPECT_GE(*r->latency_ms, 0);
  EXPECT_TRUE(r->steps[2].bytes_per_s.has_value());
  EXPECT_TRUE(r->steps[4].bytes_per_s.has_value());
  EXPECT_FALSE(r->probe_left);
  EXPECT_EQ(r->probe_key, "check/probe-000000000000002a");
  // Nothing is left under check/, and the other objects are untouched.
  int left = 0;
  ASSERT_TRUE(store
                  ->List("check/",
                         [&](std::string_view, uint64_t) {
                           ++left;
                           return Status::Ok();
                         })
                  .ok());
  EXPECT_EQ(left, 0);
  EXPECT_EQ(*store->Get("snapshots/a"), "x");
}

TEST_F(CheckTest, ANewStoreHasNoConfigAndStillPasses) {
  auto r = CheckStore(*Store(RefusingStore::Refuse::kNothing), Options());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok) << Results(*r);
  EXPECT_FALSE(r->config_present);
  EXPECT_EQ(r->steps[1].detail, "absent: a new store (the first push writes it)");
}

TEST_F(CheckTest, EachRefusalFailsItsStepAndTheCheck) {
  struct Case {
    RefusingStore::Refuse refuse;
    std::string results;
    std::string detail_has;
    bool probe_left;
  };
  const Case cases[] = {
      {RefusingStore::Refuse::kDelete,
       "list=ok config=ok put=ok head=ok get=ok range=ok listed=ok delete=failed ",
       "DELETE check/probe-000000000000002a: permission denied", true},
      {RefusingStore::Refuse::kPut,
       "list=ok config=ok put=failed head=skipped get=skipped range=skipped listed=skipped "
       "delete=ok ",
       "permission denied (403 AccessDenied)", false},
      {RefusingStore::Refuse::kRange,
       "list=ok config=ok put=ok head=ok get=ok range=failed listed=ok delete=ok ", "501", false},
      {RefusingStore::Refuse::kGetCorrupt,
       "list=ok config=ok put=ok head=ok get=failed range=skipped listed=ok delete=ok ",
       "differ from the 100000 written", false},
      {RefusingStore::Refuse::kListHidesNew,
       "list=ok config=ok put=ok head=ok get=ok range=ok listed=failed delete=ok ",
       "does not show the probe", false},
  };
  for (const Case& c : cases) {
    cutover::testing::TempDir d;
    auto fs = FileStore::Open("file://" + d.Join("s"));
    ASSERT_TRUE(fs.ok());
    RefusingStore store(std::move(*fs), c.refuse);
    auto r = CheckStore(store, Options());
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->ok);
    EXPECT_EQ(Results(*r), c.results);
    std::string details;
    for (const auto& st : r->steps) details += st.detail + "|";
    EXPECT_NE(details.find(c.detail_has), std::string::npos) << details;
    EXPECT_EQ(r->probe_left, c.probe_left) << c.results;
  }
}

TEST_F(CheckTest, BadOptionsAreInvalidArgument) {
  auto store = Store(RefusingStore::Refuse::kNothing);
  CheckOptions o = Options();
  o.sample_bytes = 0;
  EXPECT_EQ(CheckStore(*store, o).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace cutover
