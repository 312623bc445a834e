#include "core/status.h"

#include <gtest/gtest.h>

namespace cutover {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
  EXPECT_EQ(ExitCodeFor(s), 0);
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = Status::NotFound("no such snapshot: nightly");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.ToString(), "not_found: no such snapshot: nightly");
  EXPECT_EQ(s.WithContext("pull").message(), "pull: no such snapshot: nightly");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusTest, ExitCodesFollowTheTable) {
  EXPECT_EQ(ExitCodeFor(Status::InvalidArgument("x")), 2);
  EXPECT_EQ(ExitCodeFor(Status::Corruption("x")), 2);
  EXPECT_EQ(ExitCodeFor(Status::Unimplemented("x")), 2);
  EXPECT_EQ(ExitCodeFor(Status::Unavailable("x")), 3);
  EXPECT_EQ(ExitCodeFor(Status::Environment("x")), 3);
  EXPECT_EQ(ExitCodeFor(Status::IoError("x")), 3);
}

Result<int> Half(int v) {
  if (v % 2 != 0) return Status::InvalidArgument("odd: " + std::to_string(v));
  return v / 2;
}

Result<int> Quarter(int v) {
  CUTOVER_ASSIGN_OR_RETURN(int h, Half(v));
  CUTOVER_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int v) {
  CUTOVER_RETURN_IF_ERROR(Half(v).status());
  return Status::Ok();
}

TEST(ResultTest, ValueOrStatus) {
  Result<int> r = Half(8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 4);
  EXPECT_TRUE(r.status().ok());
  Result<int> bad = Half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "odd: 3");
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(ResultTest, MacrosPropagate) {
  EXPECT_EQ(*Quarter(12), 3);
  EXPECT_EQ(Quarter(6).status().message(), "odd: 3");
  EXPECT_TRUE(CheckEven(2).ok());
  EXPECT_EQ(CheckEven(5).code(), Code::kInvalidArgument);
}

TEST(ResultTest, OkStatusIsNotAValue) {
  Result<std::string> r{Status::Ok()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInternal);
}

}  // namespace
}  // namespace cutover
