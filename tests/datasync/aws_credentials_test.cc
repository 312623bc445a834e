// Credentials from the environment and from shared credentials files, with pinned messages.
#include "datasync/aws_credentials.h"

#include <map>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

EnvLookup MapEnv(std::map<std::string, std::string, std::less<>> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

constexpr char kFile[] = R"(# a comment
; another comment
[default]
aws_access_key_id = AKIDDEFAULT
aws_secret_access_key=secretdefault

[ci]
AWS_ACCESS_KEY_ID   =   AKIDCI
aws_secret_access_key = secret/ci+key
aws_session_token = tok==
region = eu-west-1

[no-secret]
aws_access_key_id = AKIDX

[legacy]
aws_access_key_id = AKIDL
aws_secret_access_key = s
aws_security_token = oldtoken
)";

TEST(AwsCredentialsTest, EnvironmentComesFirst) {
  auto c = LoadAwsCredentials(MapEnv({{"AWS_ACCESS_KEY_ID", "AKIDENV"},
                                      {"AWS_SECRET_ACCESS_KEY", "envsecret"},
                                      {"AWS_SESSION_TOKEN", "envtoken"},
                                      {"AWS_PROFILE", "ci"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->access_key_id, "AKIDENV");
  EXPECT_EQ(c->secret_access_key, "envsecret");
  EXPECT_EQ(c->session_token, "envtoken");
  EXPECT_EQ(c->source, "environment");
}

TEST(AwsCredentialsTest, HalfAnEnvironmentPairIsAnError) {
  EXPECT_EQ(LoadAwsCredentials(MapEnv({{"AWS_ACCESS_KEY_ID", "AKID"}})).status().message(),
            "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  auto r = LoadAwsCredentials(MapEnv({{"AWS_SECRET_ACCESS_KEY", "hidden-value"}}));
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
}

TEST(AwsCredentialsTest, ReadsProfilesFromTheSharedFile) {
  testing::TempDir dir;
  std::string path = dir.Join("credentials");
  ASSERT_TRUE(WriteFileAtomic(path, kFile).ok());

  auto d = LoadAwsCredentials(MapEnv({{"AWS_SHARED_CREDENTIALS_FILE", path}}));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->access_key_id, "AKIDDEFAULT");
  EXPECT_EQ(d->secret_access_key, "secretdefault");
  EXPECT_EQ(d->session_token, "");
  EXPECT_EQ(d->source, "profile \"default\" of " + path);

  auto ci =
      LoadAwsCredentials(MapEnv({{"AWS_SHARED_CREDENTIALS_FILE", path}, {"AWS_PROFILE", "ci"}}));
  ASSERT_TRUE(ci.ok()) << ci.status().ToString();
  EXPECT_EQ(ci->access_key_id, "AKIDCI");
  EXPECT_EQ(ci->secret_access_key, "secret/ci+key");
  EXPECT_EQ(ci->session_token, "tok==");

  auto legacy = ParseAwsCredentialsFile(kFile, "legacy", "f");
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(legacy->session_token, "oldtoken");

  // ~/.aws/credentials through HOME.
  ASSERT_TRUE(MakeDirs(dir.Join("home/.aws")).ok());
  ASSERT_TRUE(WriteFileAtomic(dir.Join("home/.aws/credentials"), kFile).ok());
  auto home = LoadAwsCredentials(MapEnv({{"HOME", dir.Join("home")}, {"AWS_PROFILE", "ci"}}));
  ASSERT_TRUE(home.ok()) << home.status().ToString();
  EXPECT_EQ(home->access_key_id, "AKIDCI");
}

TEST(AwsCredentialsTest, PinnedProfileErrors) {
  EXPECT_EQ(ParseAwsCredentialsFile(kFile, "nope", "/x/credentials").status().message(),
            "AWS profile \"nope\" not found in /x/credentials");
  auto no_secret = ParseAwsCredentialsFile(kFile, "no-secret", "/x/credentials");
  EXPECT_EQ(no_secret.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(no_secret.status().message(),
            "AWS profile \"no-secret\" in /x/credentials has no aws_secret_access_key");
  EXPECT_EQ(
      ParseAwsCredentialsFile("[p]\naws_secret_access_key = s\n", "p", "f").status().message(),
      "AWS profile \"p\" in f has no aws_access_key_id");
  EXPECT_EQ(ParseAwsCredentialsFile("[p\n", "p", "f").status().message(),
            "f:1: bad section header");
  EXPECT_EQ(ParseAwsCredentialsFile("[p]\n# c\njunk line\n", "p", "f").status().message(),
            "f:3: expected key = value");
  // Indented continuation lines and CRLF endings are accepted.
  auto crlf = ParseAwsCredentialsFile(
      "[p]\r\nnested =\r\n  inner = 1\r\n  continued\r\naws_access_key_id = "
      "A\r\naws_secret_access_key = B\r\n",
      "p", "f");
  ASSERT_TRUE(crlf.ok()) << crlf.status().ToString();
  EXPECT_EQ(crlf->access_key_id, "A");
  EXPECT_EQ(crlf->secret_access_key, "B");
}

TEST(AwsCredentialsTest, NothingAnywhereNamesWhereItLooked) {
  auto r = LoadAwsCredentials(MapEnv({{"HOME", "/nonexistent"}, {"AWS_PROFILE", "prod"}}));
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or add profile "
            "\"prod\" to /nonexistent/.aws/credentials (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE)");
  EXPECT_EQ(LoadAwsCredentials(MapEnv({})).status().message(),
            "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (HOME is not "
            "set, so there is no ~/.aws/credentials)");
}

TEST(AwsCredentialsTest, MessagesNeverContainSecrets) {
  testing::TempDir dir;
  std::string path = dir.Join("credentials");
  ASSERT_TRUE(WriteFileAtomic(path, "[p]\naws_secret_access_key = TOPSECRET\n").ok());
  auto r =
      LoadAwsCredentials(MapEnv({{"AWS_SHARED_CREDENTIALS_FILE", path}, {"AWS_PROFILE", "p"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("TOPSECRET"), std::string::npos);
  EXPECT_EQ(r.status().message(), "AWS profile \"p\" in " + path + " has no aws_access_key_id");
}

}  // namespace
}  // namespace cutover
