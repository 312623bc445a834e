// datasync check against a directory store, and against stores that refuse one thing each.
#include "datasync/check.h"

#include <gtest/gtest.h>

#include "datasync/file_store.h"
#include "tests/datasync/test_store.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

// What a store refuses (a permission error) or answers wrongly.
enum class Refuse { kNothing, kDelete, kPut, kRange, kGetCorrupt, kListHidesNew };

// A FileStore at `url` that refuses one thing.
std::unique_ptr<TestStore> RefusingStore(const std::string& url, Refuse refuse) {
  auto fs = FileStore::Open(url);
  EXPECT_TRUE(fs.ok());
  auto store = std::make_unique<TestStore>(std::unique_ptr<Store>(std::move(*fs)));
  store->fail = [refuse](std::string_view op, std::string_view key) -> std::optional<Status> {
    if (refuse == Refuse::kPut && op == "put") {
      return Status::FailedPrecondition("PUT " + std::string(key) +
                                        ": permission denied (403 AccessDenied)");
    }
    if (refuse == Refuse::kRange && op == "range") return Status::Unimplemented("ranged GET: 501");
    if (refuse == Refuse::kListHidesNew && op == "list" && key == "check/") return Status::Ok();
    if (refuse == Refuse::kDelete && op == "delete") {
      return Status::FailedPrecondition("DELETE " + std::string(key) +
                                        ": permission denied (403 AccessDenied)");
    }
    return std::nullopt;
  };
  if (refuse == Refuse::kGetCorrupt) {
    store->after_get = [](std::string_view key, std::string* bytes) {
      if (key.starts_with("check/") && !bytes->empty()) (*bytes)[0] ^= 1;
    };
  }
  return store;
}

class CheckTest : public ::testing::Test {
 protected:
  std::unique_ptr<TestStore> Store(Refuse r) {
    return RefusingStore("file://" + dir_.Join("store"), r);
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
  auto store = Store(Refuse::kNothing);
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
  auto r = CheckStore(*Store(Refuse::kNothing), Options());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok) << Results(*r);
  EXPECT_FALSE(r->config_present);
  EXPECT_EQ(r->steps[1].detail, "absent: a new store (the first push writes it)");
}

TEST_F(CheckTest, EachRefusalFailsItsStepAndTheCheck) {
  struct Case {
    Refuse refuse;
    std::string results;
    std::string detail_has;
    bool probe_left;
  };
  const Case cases[] = {
      {Refuse::kDelete, "list=ok config=ok put=ok head=ok get=ok range=ok listed=ok delete=failed ",
       "DELETE check/probe-000000000000002a: permission denied", true},
      {Refuse::kPut,
       "list=ok config=ok put=failed head=skipped get=skipped range=skipped listed=skipped "
       "delete=ok ",
       "permission denied (403 AccessDenied)", false},
      {Refuse::kRange, "list=ok config=ok put=ok head=ok get=ok range=failed listed=ok delete=ok ",
       "501", false},
      {Refuse::kGetCorrupt,
       "list=ok config=ok put=ok head=ok get=failed range=skipped listed=ok delete=ok ",
       "differ from the 100000 written", false},
      {Refuse::kListHidesNew,
       "list=ok config=ok put=ok head=ok get=ok range=ok listed=failed delete=ok ",
       "does not show the probe", false},
  };
  for (const Case& c : cases) {
    cutover::testing::TempDir d;
    auto store = RefusingStore("file://" + d.Join("s"), c.refuse);
    auto r = CheckStore(*store, Options());
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
  auto store = Store(Refuse::kNothing);
  CheckOptions o = Options();
  o.sample_bytes = 0;
  EXPECT_EQ(CheckStore(*store, o).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace cutover
