#include "core/log.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cutover {
namespace {

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetLogLevel(LogLevel::kDebug);
    SetLogSink([this](std::string_view line) { lines_.emplace_back(line); });
  }
  void TearDown() override {
    SetLogSink(nullptr);
    SetLogLevel(LogLevel::kWarn);
  }
  std::string All() const {
    std::string all;
    for (const auto& l : lines_) all += l;
    return all;
  }
  std::vector<std::string> lines_;
};

TEST_F(LogTest, AuthorizationHeaderAndAwsSecretNeverAppear) {
  const std::string token = "Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu";
  const std::string aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  CUTOVER_LOG(kDebug) << "PUT /chunks/ab\r\nAuthorization: " << token << "\r\nHost: x";
  CUTOVER_LOG(kInfo) << "env AWS_SECRET_ACCESS_KEY=" << aws << " AWS_REGION=us-east-1";
  std::string all = All();
  EXPECT_EQ(all.find("eyJhbGciOiJIUzI1NiJ9"), std::string::npos) << all;
  EXPECT_EQ(all.find(aws), std::string::npos) << all;
  EXPECT_NE(all.find("Authorization: [REDACTED]"), std::string::npos) << all;
  EXPECT_NE(all.find("AWS_SECRET_ACCESS_KEY=[REDACTED]"), std::string::npos) << all;
  // What is not a secret stays readable.
  EXPECT_NE(all.find("AWS_REGION=us-east-1"), std::string::npos) << all;
  EXPECT_NE(all.find("Host: x"), std::string::npos) << all;
}

TEST(RedactTest, PasswordsInUrls) {
  EXPECT_EQ(Redact("GET https://alice:hunter2@dav.example/x failed"),
            "GET https://alice:[REDACTED]@dav.example/x failed");
  EXPECT_EQ(Redact("s3://bucket/prefix"), "s3://bucket/prefix");
  EXPECT_EQ(Redact("http://user@host/p"), "http://user@host/p");
}

TEST(RedactTest, SecretNamedPairs) {
  EXPECT_EQ(Redact("HF_TOKEN=abc123 NCCL_DEBUG=INFO"), "HF_TOKEN=[REDACTED] NCCL_DEBUG=INFO");
  EXPECT_EQ(Redact("db_password=pw1,next=1"), "db_password=[REDACTED],next=1");
  EXPECT_EQ(Redact("X-Amz-Security-Token: FQoGZXIvYXdzE\nnext"), "X-Amz-Security-Token: [REDACTED]\nnext");
  EXPECT_EQ(Redact("{\"aws_secret_access_key\": \"s3cr3t\", \"region\": \"eu\"}"),
            "{\"aws_secret_access_key\": \"[REDACTED]\", \"region\": \"eu\"}");
  EXPECT_EQ(Redact("cookie: session=abc"), "cookie: [REDACTED]");
}

TEST(RedactTest, SecretNames) {
  EXPECT_TRUE(IsSecretName("AWS_SECRET_ACCESS_KEY"));
  EXPECT_TRUE(IsSecretName("AWS_SESSION_TOKEN"));
  EXPECT_TRUE(IsSecretName("WANDB_API_KEY"));
  EXPECT_TRUE(IsSecretName("MYSQL_PASSWORD"));
  EXPECT_TRUE(IsSecretName("authorization"));
  EXPECT_FALSE(IsSecretName("CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(IsSecretName("NCCL_SOCKET_IFNAME"));
  EXPECT_FALSE(IsSecretName("LD_LIBRARY_PATH"));
  EXPECT_FALSE(IsSecretName("CUBLAS_WORKSPACE_CONFIG"));
}

TEST_F(LogTest, LevelsFilter) {
  SetLogLevel(LogLevel::kWarn);
  CUTOVER_LOG(kInfo) << "hidden";
  CUTOVER_LOG(kError) << "shown";
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0], "cutover error: shown\n");
  EXPECT_EQ(ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(ParseLogLevel("nonsense"), LogLevel::kWarn);
}

}  // namespace
}  // namespace cutover
