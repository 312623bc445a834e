// The S3 XML parsers (ListBucketResult, Error), URI encoding and OpenS3Store's checks.
#include "datasync/s3_store.h"

#include <map>
#include <random>

#include <gtest/gtest.h>

namespace cutover {
namespace {

// The shape AWS (and s3rver) answer ListObjectsV2 with.
constexpr char kListPage[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>cutover</Name>
  <Prefix>data/chunks/</Prefix>
  <KeyCount>2</KeyCount>
  <MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <ContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</ContinuationToken>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&amp;x</NextContinuationToken>
  <Contents>
    <Key>data/chunks/ab/cd/0001</Key>
    <LastModified>2024-05-01T10:00:00.000Z</LastModified>
    <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag>
    <Size>1048576</Size>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents>
    <Key>data/chunks/ab/cd/a&amp;b</Key>
    <Size>0</Size>
    <Owner><ID>x</ID><DisplayName>y</DisplayName></Owner>
  </Contents>
</ListBucketResult>
)";

constexpr char kLastPage[] =
    "<ListBucketResult><Name>b</Name><IsTruncated>false</IsTruncated>"
    "<Contents><Key>k</Key><Size>3</Size></Contents></ListBucketResult>";

constexpr char kErrorDoc[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<Error>
  <Code>NoSuchKey</Code>
  <Message>The specified key does not exist.</Message>
  <Key>data/config</Key>
  <RequestId>4442587FB7D0A2F9</RequestId>
</Error>)";

TEST(S3ListParseTest, ParsesAPage) {
  auto r = ParseS3ListObjectsV2(kListPage);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=&x");
  ASSERT_EQ(r->objects.size(), 2u);
  EXPECT_EQ(r->objects[0].key, "data/chunks/ab/cd/0001");
  EXPECT_EQ(r->objects[0].size, 1048576u);
  EXPECT_EQ(r->objects[1].key, "data/chunks/ab/cd/a&b");
  EXPECT_EQ(r->objects[1].size, 0u);

  auto last = ParseS3ListObjectsV2(kLastPage);
  ASSERT_TRUE(last.ok());
  EXPECT_FALSE(last->truncated);
  EXPECT_EQ(last->objects.size(), 1u);
  auto empty = ParseS3ListObjectsV2("<ListBucketResult/>");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->objects.empty());
}

TEST(S3ListParseTest, MalformedPagesAreCorruption) {
  const std::pair<const char*, const char*> cases[] = {
      {"<Error><Code>x</Code></Error>", "not a ListBucketResult (root <Error>)"},
      {"<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
       "ListBucketResult: Contents without Key"},
      {"<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>",
       "ListBucketResult: bad or missing Size for k"},
      {"<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>",
       "ListBucketResult: bad or missing Size for k"},
      {"<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
       "ListBucketResult: IsTruncated without NextContinuationToken"},
      {"<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>",
       "ListBucketResult: bad IsTruncated \"yes\""},
      {"<ListBucketResult><Contents>", "bad XML at byte 28: unexpected end inside <Contents>"},
      {"not xml", "bad XML at byte 7: text outside the root element"},
  };
  for (const auto& [xml, message] : cases) {
    auto r = ParseS3ListObjectsV2(xml);
    ASSERT_FALSE(r.ok()) << xml;
    EXPECT_EQ(r.status().code(), Code::kCorruption) << xml;
    EXPECT_EQ(r.status().message(), message) << xml;
  }
}

TEST(S3ErrorParseTest, ParsesErrorDocuments) {
  auto e = ParseS3Error(kErrorDoc);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "NoSuchKey");
  EXPECT_EQ(e->message, "The specified key does not exist.");
  EXPECT_FALSE(ParseS3Error("").has_value());
  EXPECT_FALSE(ParseS3Error("<Error><Message>m</Message></Error>").has_value());
  EXPECT_FALSE(ParseS3Error("<ListBucketResult/>").has_value());
  EXPECT_FALSE(ParseS3Error("<Error><Code>SlowDown</Code>").has_value());
  EXPECT_FALSE(ParseS3Error("<html><body>502 Bad Gateway</body></html>").has_value());
}

TEST(S3ListParseTest, MutatedInputsNeverCrash) {
  std::mt19937 rng(2);
  const char kBytes[] = "<>/&;:='\"#x \0\xff";
  std::string base = kListPage;
  for (size_t n = 0; n < base.size(); n += 3) {
    (void)ParseS3ListObjectsV2(base.substr(0, n));
    (void)ParseS3Error(std::string(kErrorDoc).substr(0, n % sizeof(kErrorDoc)));
  }
  int ok = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string m = base;
    for (int k = 0; k < 3; ++k) m[rng() % m.size()] = kBytes[rng() % (sizeof(kBytes) - 1)];
    ok += ParseS3ListObjectsV2(m).ok();
    (void)ParseS3Error(m);
  }
  EXPECT_LT(ok, 3000);
}

TEST(AwsUriEncodeTest, EncodesPerSigV4) {
  EXPECT_EQ(AwsUriEncode("chunks/ab cd+e=f~_.-", false), "chunks%2Fab%20cd%2Be%3Df~_.-");
  EXPECT_EQ(AwsUriEncode("a/b", true), "a/b");
  EXPECT_EQ(AwsUriEncode("\xc3\xa9", false), "%C3%A9");
}

std::optional<std::string> FakeEnv(std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> kEnv = {
      {"AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"}, {"AWS_SECRET_ACCESS_KEY", "secret"}};
  auto it = kEnv.find(name);
  if (it == kEnv.end()) return std::nullopt;
  return it->second;
}

TEST(OpenS3StoreTest, ChecksTheUrlAndOptions) {
  StoreOptions o;
  o.getenv = FakeEnv;
  EXPECT_EQ(OpenS3Store("s3:/b", o).status().message(),
            "bad S3 store URL: expected s3://bucket/prefix");
  EXPECT_EQ(OpenS3Store("s3:///p", o).status().message(),
            "bad S3 store URL: the bucket name must be 1 to 63 characters");
  EXPECT_EQ(OpenS3Store("s3://b%20/p", o).status().message(),
            "bad S3 bucket name \"b%20\": use letters, digits, '.', '_' and '-'");
  EXPECT_EQ(OpenS3Store("s3://b/a//c", o).status().message(),
            "bad S3 store prefix \"a//c\": use '/'-separated components of [A-Za-z0-9._-]");
  StoreOptions bad_ep = o;
  bad_ep.endpoint = "http://h:1/path";
  EXPECT_EQ(OpenS3Store("s3://b", bad_ep).status().message(),
            "bad S3 endpoint: expected http(s)://host[:port] without a path or credentials");
  StoreOptions bad_page = o;
  bad_page.list_page_size = 0;
  EXPECT_EQ(OpenS3Store("s3://b", bad_page).status().message(),
            "S3 list page size must be 1..1000, not 0");
  auto ok = OpenS3Store("s3://bucket/data/sets/", o);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)->Url(), "s3://bucket/data/sets");
  EXPECT_EQ((*OpenS3Store("s3://bucket", o))->Url(), "s3://bucket");
}

TEST(OpenS3StoreTest, MissingCredentialsAreOneLine) {
  StoreOptions o;
  o.getenv = [](std::string_view name) -> std::optional<std::string> {
    if (name == "HOME") return "/nonexistent-home";
    return std::nullopt;
  };
  auto r = OpenS3Store("s3://b/p", o);
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or add profile "
            "\"default\" to /nonexistent-home/.aws/credentials (AWS_PROFILE, "
            "AWS_SHARED_CREDENTIALS_FILE)");
}

}  // namespace
}  // namespace cutover
