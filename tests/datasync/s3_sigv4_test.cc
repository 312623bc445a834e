// Our S3 requests, captured by a scripted server, signed right: botocore's SigV4 signer
// (Debian's python3-botocore, run by tests/datasync/sigv4_check.py) recomputes every signature
// at the request's own X-Amz-Date and must agree, query strings of several parameters included.
#include <map>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "core/json.h"
#include "core/sha256.h"
#include "datasync/s3_store.h"
#include "tests/harness/scripted_http_server.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using testing::RecordedRequest;
using testing::ScriptedHttpServer;
using testing::ScriptedResponse;

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kAccessKey[] = "AKIDEXAMPLE";
constexpr char kSecretKey[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr char kToken[] = "FQoGZXIvYXdzEXAMPLE//token+with=chars";
// Has '/', '+' and '=': all must be percent-encoded in the query.
constexpr char kNextToken[] = "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=";

ScriptedResponse Answer(const RecordedRequest& r) {
  if (r.method == "PUT" || r.method == "DELETE") return {.status = r.method == "PUT" ? 200 : 204};
  if (r.method == "HEAD") return {.status = 200, .headers = {{"Content-Length", "11"}}};
  if (r.target.find("list-type=2") != std::string::npos) {
    bool first = r.target.find("continuation-token=") == std::string::npos;
    std::string body =
        std::string("<ListBucketResult><IsTruncated>") + (first ? "true" : "false") +
        "</IsTruncated>" +
        (first ? std::string("<NextContinuationToken>") + kNextToken + "</NextContinuationToken>"
               : "") +
        "<Contents><Key>data/chunks/ab/cd/" + (first ? "k1" : "k2") +
        "</Key><Size>5</Size></Contents></ListBucketResult>";
    return {.status = 200, .body = body};
  }
  if (r.Header("Range")) {
    return {.status = 206, .headers = {{"Content-Range", "bytes 2-5/11"}}, .body = "llo "};
  }
  return {.status = 200, .body = "hello world"};
}

std::function<std::optional<std::string>(std::string_view)> Env(bool with_token) {
  return [with_token](std::string_view name) -> std::optional<std::string> {
    if (name == "AWS_ACCESS_KEY_ID") return std::string(kAccessKey);
    if (name == "AWS_SECRET_ACCESS_KEY") return std::string(kSecretKey);
    if (name == "AWS_SESSION_TOKEN" && with_token) return std::string(kToken);
    return std::nullopt;
  };
}

class S3SigV4Test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string out;
    if (testing::RunShell(std::string(kPython) + " -c 'import botocore.auth' 2>&1", &out) != 0) {
      CUTOVER_SKIP_OR_FAIL(std::string(kPython) +
                           " cannot import botocore (apt-get install python3-botocore): " + out);
    }
    ASSERT_TRUE(server_.Start().ok());
    server_.SetHandler(Answer);
  }

  std::unique_ptr<Store> Open(bool with_token, const std::string& region) {
    StoreOptions o;
    o.endpoint = server_.Url("/");
    o.region = region;
    o.list_page_size = 100;
    o.getenv = Env(with_token);
    auto s = OpenS3Store("s3://cutover/data", o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  // Runs the botocore check on `requests`; returns its exit status, its output in *out.
  int Check(const std::vector<RecordedRequest>& requests, bool with_token,
            const std::string& region, std::string* out) {
    nlohmann::json doc = {{"access_key", kAccessKey},
                          {"secret_key", kSecretKey},
                          {"token", with_token ? kToken : ""},
                          {"region", region}};
    doc["requests"] = nlohmann::json::array();
    for (const RecordedRequest& r : requests) {
      nlohmann::json headers = nlohmann::json::array();
      for (const auto& [n, v] : r.headers) headers.push_back({n, v});
      doc["requests"].push_back(
          {{"method", r.method},
           {"target", r.target},
           {"headers", headers},
           {"body_hex", HexEncode(std::span<const uint8_t>(
                            reinterpret_cast<const uint8_t*>(r.body.data()), r.body.size()))}});
    }
    std::string path = dir_.Join("case.json");
    EXPECT_TRUE(WriteFileAtomic(path, DumpJson(doc)).ok());
    return testing::RunShell(std::string(kPython) + " " + testing::SourceDir() +
                                 "/tests/datasync/sigv4_check.py " + path + " 2>&1",
                             out);
  }

  ScriptedHttpServer server_;
  testing::TempDir dir_;
};

TEST_F(S3SigV4Test, EveryRequestVerifiesWithBotocore) {
  auto store = Open(/*with_token=*/true, "us-east-1");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("chunks/ab/cd/obj", "payload bytes").ok());
  std::vector<std::string> listed;
  ASSERT_TRUE(store
                  ->List("chunks/",
                         [&](std::string_view k, uint64_t) {
                           listed.emplace_back(k);
                           return Status::Ok();
                         })
                  .ok());
  EXPECT_EQ(listed, (std::vector<std::string>{"chunks/ab/cd/k1", "chunks/ab/cd/k2"}));
  EXPECT_EQ(store->Get("chunks/ab/cd/obj").value_or(""), "hello world");
  EXPECT_EQ(store->GetRange("chunks/ab/cd/obj", 2, 4).value_or(""), "llo ");
  EXPECT_EQ(store->Head("chunks/ab/cd/obj").value_or(0), 11u);
  ASSERT_TRUE(store->Delete("chunks/ab/cd/obj").ok());

  std::vector<RecordedRequest> reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 7u);
  EXPECT_EQ(reqs[0].method, "PUT");
  EXPECT_EQ(reqs[0].target, "/cutover/data/chunks/ab/cd/obj");
  EXPECT_EQ(reqs[0].body, "payload bytes");
  EXPECT_EQ(reqs[0].Header("x-amz-content-sha256").value_or(""), Sha256Hex("payload bytes"));
  EXPECT_EQ(reqs[1].target, "/cutover?list-type=2&max-keys=100&prefix=data%2Fchunks%2F");
  EXPECT_EQ(reqs[2].target,
            "/cutover?continuation-token=1ueGcxLPRx1Tr%2FXYExHnhbYLgveDs2J%2Fwm36Hy4vbOwM%3D"
            "&list-type=2&max-keys=100&prefix=data%2Fchunks%2F");
  EXPECT_EQ(reqs[4].Header("Range").value_or(""), "bytes=2-5");
  for (const RecordedRequest& r : reqs) {
    SCOPED_TRACE(r.method + " " + r.target);
    EXPECT_EQ(r.Header("Host").value_or(""), "127.0.0.1:" + std::to_string(server_.port()));
    EXPECT_EQ(r.Header("x-amz-date").value_or("").size(), 16u);  // 20240501T100000Z
    EXPECT_TRUE(r.Header("x-amz-content-sha256").has_value());
    EXPECT_EQ(r.Header("x-amz-security-token").value_or(""), kToken);
    EXPECT_TRUE(r.Header("Authorization")
                    .value_or("")
                    .starts_with(std::string("AWS4-HMAC-SHA256 Credential=") + kAccessKey + "/"));
    if (r.method != "PUT") {
      EXPECT_EQ(r.Header("x-amz-content-sha256").value_or(""), Sha256Hex(""));
    }
  }

  std::string out;
  EXPECT_EQ(Check(reqs, true, "us-east-1", &out), 0) << out;
  EXPECT_EQ(out, "ok 7 requests\n");
}

TEST_F(S3SigV4Test, OtherRegionWithoutTokenVerifies) {
  auto store = Open(/*with_token=*/false, "eu-west-1");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("config", std::string(100000, 'c')).ok());
  ASSERT_TRUE(store->List("", [](std::string_view, uint64_t) { return Status::Ok(); }).ok());
  std::vector<RecordedRequest> reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (const RecordedRequest& r : reqs) EXPECT_FALSE(r.Header("x-amz-security-token"));
  EXPECT_EQ(reqs[1].target, "/cutover?list-type=2&max-keys=100&prefix=data%2F");
  std::string out;
  EXPECT_EQ(Check(reqs, false, "eu-west-1", &out), 0) << out;
  EXPECT_EQ(out, "ok 3 requests\n");
}

// The check can fail: a request altered after signing is caught.
TEST_F(S3SigV4Test, TamperedRequestsAreCaught) {
  auto store = Open(/*with_token=*/true, "us-east-1");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("chunks/ab/cd/obj", "payload bytes").ok());
  ASSERT_TRUE(store->List("chunks/", [](std::string_view, uint64_t) { return Status::Ok(); }).ok());
  std::vector<RecordedRequest> reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  reqs[0].body = "other bytes";  // body hash no longer matches
  std::string target = reqs[2].target;
  size_t amp = target.find("&list-type");
  ASSERT_NE(amp, std::string::npos);
  // Parameters out of order: no longer the canonical query.
  reqs[2].target =
      "/cutover?list-type=2&" + target.substr(9, amp - 9) + "&max-keys=100&prefix=data%2Fchunks%2F";
  reqs[1].target = "/cutover?list-type=2&max-keys=99&prefix=data%2Fchunks%2F";
  std::string out;
  EXPECT_EQ(Check(reqs, true, "us-east-1", &out), 1) << out;
  EXPECT_NE(out.find("request 0 (PUT /cutover/data/chunks/ab/cd/obj): x-amz-content-sha256 does "
                     "not match the body"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("request 1 (GET /cutover?list-type=2&max-keys=99&prefix=data%2Fchunks%2F): "
                     "signature "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("query parameters not sorted"), std::string::npos) << out;
}

}  // namespace
}  // namespace cutover
