#include "core/http_client.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/file_util.h"
#include "core/log.h"
#include "tests/harness/scripted_http_server.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using std::chrono::milliseconds;
using testing::RecordedRequest;
using testing::ScriptedHttpServer;
using testing::ScriptedResponse;
using Clock = std::chrono::steady_clock;

HttpClientOptions FastOptions() {
  HttpClientOptions o;
  o.connect_timeout = milliseconds(2000);
  o.timeout = milliseconds(10000);
  o.max_attempts = 4;
  o.backoff_base = milliseconds(10);
  o.backoff_cap = milliseconds(40);
  o.rng_seed = 42;
  return o;
}

ScriptedResponse Answer(int status, std::string body = "") {
  ScriptedResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

long ElapsedMs(Clock::time_point since) {
  return static_cast<long>(std::chrono::duration_cast<milliseconds>(Clock::now() - since).count());
}

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start().ok()); }
  ScriptedHttpServer server_;
};

TEST_F(HttpClientTest, RetriesServiceUnavailableThenSucceeds) {
  server_.Enqueue(Answer(503, "busy"));
  server_.Enqueue(Answer(503, "busy"));
  server_.Enqueue(Answer(200, "ok"));
  std::vector<HttpAttempt> attempts;
  HttpClientOptions o = FastOptions();
  o.observer = [&](const HttpAttempt& a) { attempts.push_back(a); };
  HttpClient client(o);
  Result<HttpResponse> r = client.Send({.url = server_.Url("/a")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok");
  EXPECT_EQ(r->stats.attempts, 3);
  EXPECT_EQ(server_.request_count(), 3u);
  ASSERT_EQ(attempts.size(), 3u);
  EXPECT_EQ(attempts[0].status, 503);
  EXPECT_TRUE(attempts[0].will_retry);
  EXPECT_LE(attempts[0].retry_delay, milliseconds(10));
  EXPECT_TRUE(attempts[1].will_retry);
  EXPECT_LE(attempts[1].retry_delay, milliseconds(20));
  EXPECT_EQ(attempts[2].status, 200);
  EXPECT_FALSE(attempts[2].will_retry);
}

TEST_F(HttpClientTest, HonoursRetryAfterSeconds) {
  ScriptedResponse busy = Answer(429, "slow down");
  busy.headers = {{"Retry-After", "1"}};
  server_.Enqueue(busy);
  server_.Enqueue(Answer(200, "ok"));
  HttpClient client(FastOptions());
  auto start = Clock::now();
  Result<HttpResponse> r = client.Send({.url = server_.Url("/limited")});
  long ms = ElapsedMs(start);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->stats.attempts, 2);
  EXPECT_GE(ms, 1000);
  EXPECT_LT(ms, 3000);
}

TEST(HttpRetryRulesTest, ParseRetryAfter) {
  auto now = std::chrono::system_clock::from_time_t(1445412470);  // 2015-10-21 07:27:50 UTC
  milliseconds cap(60000);
  EXPECT_EQ(ParseRetryAfter("5", now, cap), milliseconds(5000));
  EXPECT_EQ(ParseRetryAfter(" 0 ", now, cap), milliseconds(0));
  EXPECT_EQ(ParseRetryAfter("3600", now, cap), cap);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now, cap), milliseconds(10000));
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:00:00 GMT", now, cap), milliseconds(0));
  EXPECT_EQ(ParseRetryAfter("soon", now, cap), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("", now, cap), std::nullopt);
}

TEST(HttpRetryRulesTest, BackoffIsFullJitterWithinCapAndSeeded) {
  std::mt19937_64 a(7), b(7);
  for (int attempt = 1; attempt <= 12; ++attempt) {
    for (int i = 0; i < 50; ++i) {
      milliseconds d = BackoffDelay(attempt, milliseconds(100), milliseconds(1000), a);
      EXPECT_EQ(d, BackoffDelay(attempt, milliseconds(100), milliseconds(1000), b));
      EXPECT_GE(d.count(), 0);
      EXPECT_LE(d.count(), std::min<int64_t>(1000, 100LL << (attempt - 1)));
    }
  }
  // Full jitter: over many draws of the 4th attempt, values spread across [0,
  // 800].
  int64_t lo = 800, hi = 0;
  for (int i = 0; i < 200; ++i) {
    int64_t d = BackoffDelay(4, milliseconds(100), milliseconds(1000), a).count();
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  EXPECT_LT(lo, 200);
  EXPECT_GT(hi, 600);
}

TEST(HttpCaBundleTest, EnvironmentThenCurlDefaultThenWellKnownPaths) {
  std::set<std::string> present;
  auto exists = [&](const std::string& p) { return present.count(p) > 0; };
  const char* debian = "/etc/ssl/certs/ca-certificates.crt";
  // $SSL_CERT_FILE wins, even over a present default.
  present = {debian};
  EXPECT_EQ(PickCaBundle("/custom/ca.pem", debian, exists), "/custom/ca.pem");
  // libcurl's compiled-in default present: leave it to libcurl ("").
  EXPECT_EQ(PickCaBundle(nullptr, debian, exists), "");
  EXPECT_EQ(PickCaBundle("", debian, exists), "");
  // The packaged binary on RHEL: the Debian path is absent, RHEL's bundle is used.
  present = {"/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"};
  EXPECT_EQ(PickCaBundle(nullptr, debian, exists), "/etc/pki/tls/certs/ca-bundle.crt");
  present = {"/etc/ssl/cert.pem"};
  EXPECT_EQ(PickCaBundle(nullptr, debian, exists), "/etc/ssl/cert.pem");
  EXPECT_EQ(PickCaBundle(nullptr, nullptr, exists), "/etc/ssl/cert.pem");
  // Nothing anywhere: libcurl's default, which then fails with its own message.
  present = {};
  EXPECT_EQ(PickCaBundle(nullptr, debian, exists), "");
}

TEST(HttpRetryRulesTest, RetryableSets) {
  for (long s : {408, 429, 500, 502, 503, 504}) EXPECT_TRUE(IsRetryableHttpStatus(s)) << s;
  for (long s : {200, 301, 400, 401, 403, 404, 409, 412, 501}) {
    EXPECT_FALSE(IsRetryableHttpStatus(s)) << s;
  }
  for (int c : {CURLE_COULDNT_CONNECT, CURLE_OPERATION_TIMEDOUT, CURLE_PARTIAL_FILE,
                CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING}) {
    EXPECT_TRUE(IsRetryableCurlCode(c)) << c;
  }
  for (int c : {CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_URL_MALFORMAT,
                CURLE_WRITE_ERROR, CURLE_READ_ERROR}) {
    EXPECT_FALSE(IsRetryableCurlCode(c)) << c;
  }
}

TEST(HttpRedactTest, RedactsPasswordsAndSignatures) {
  EXPECT_EQ(RedactUrl("http://user:hunter2@host:8080/p?q=1"),
            "http://user:[REDACTED]@host:8080/p?q=1");
  EXPECT_EQ(RedactUrl("https://user@host/p"), "https://user@host/p");
  EXPECT_EQ(RedactUrl("https://b.s3.amazonaws.com/"
                      "k?X-Amz-Credential=AKIA%2F1&X-Amz-Date=2024"
                      "&X-Amz-Signature=abcdef#frag"),
            "https://b.s3.amazonaws.com/k?X-Amz-Credential=[REDACTED]&X-Amz-Date=2024"
            "&X-Amz-Signature=[REDACTED]#frag");
  EXPECT_EQ(RedactUrl("http://h/?a=1&b"), "http://h/?a=1&b");
}

TEST_F(HttpClientTest, NotFoundIsNotRetried) {
  server_.Enqueue(Answer(404, "nope"));
  server_.Enqueue(Answer(200, "should not be asked"));
  HttpClient client(FastOptions());
  Result<HttpResponse> r = client.Send({.url = server_.Url("/missing")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "nope");
  EXPECT_EQ(r->stats.attempts, 1);
  EXPECT_EQ(server_.request_count(), 1u);
}

TEST_F(HttpClientTest, GivesUpAfterMaxAttemptsWithLastResponse) {
  std::atomic<int> n{0};
  server_.SetHandler(
      [&](const RecordedRequest&) { return Answer(503, "busy " + std::to_string(++n)); });
  HttpClientOptions o = FastOptions();
  o.max_attempts = 3;
  HttpClient client(o);
  Result<HttpResponse> r = client.Send({.url = server_.Url("/busy")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "busy 3");
  EXPECT_EQ(r->stats.attempts, 3);
  EXPECT_EQ(server_.request_count(), 3u);
}

// A port that refuses connections: bound, never listening, held for the test's
// duration.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~RefusingPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(HttpClientErrorTest, ConnectionRefusedIsUnavailableAfterRetries) {
  RefusingPort refusing;
  std::string p = std::to_string(refusing.port());
  std::vector<int> codes;
  HttpClientOptions o = FastOptions();
  o.max_attempts = 3;
  o.observer = [&](const HttpAttempt& a) { codes.push_back(a.curl_code); };
  HttpClient client(o);
  Result<HttpResponse> r = client.Send({.url = "http://user:hunter2@127.0.0.1:" + p + "/x"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(r.status().message(), "GET http://user:[REDACTED]@127.0.0.1:" + p +
                                      "/x: Couldn't connect to server (Failed to connect to "
                                      "127.0.0.1 port " +
                                      p + ": Couldn't connect to server) after 3 attempts");
  EXPECT_EQ(codes, std::vector<int>(3, CURLE_COULDNT_CONNECT));
}

TEST(HttpClientErrorTest, MalformedRequestsAreInvalidArgument) {
  HttpClient client(FastOptions());
  Result<HttpResponse> r = client.Send({.method = "GE T", .url = "http://127.0.0.1:1/"});
  EXPECT_EQ(r.status().ToString(),
            "invalid_argument: http: bad method in GE T http://127.0.0.1:1/");
  r = client.Send({.url = "ftp://127.0.0.1/"});
  EXPECT_EQ(r.status().ToString(),
            "invalid_argument: http: URL must start with http:// or https://: GET "
            "ftp://127.0.0.1/");
  HttpRequest both{.method = "PUT", .url = "http://127.0.0.1:1/", .body = "x"};
  both.upload = HttpUploadSource{.file_path = "/etc/hostname"};
  r = client.Send(both);
  EXPECT_EQ(r.status().ToString(),
            "invalid_argument: http: both a body and an upload source in PUT "
            "http://127.0.0.1:1/");
}

TEST_F(HttpClientTest, StalledResponseIsRetried) {
  ScriptedResponse stall = Answer(200, "late");
  stall.delay = milliseconds(5000);
  server_.Enqueue(stall);
  server_.Enqueue(Answer(200, "prompt"));
  HttpClientOptions o = FastOptions();
  o.low_speed_limit = 1;
  o.low_speed_time = std::chrono::seconds(1);
  std::vector<int> codes;
  o.observer = [&](const HttpAttempt& a) { codes.push_back(a.curl_code); };
  HttpClient client(o);
  auto start = Clock::now();
  Result<HttpResponse> r = client.Send({.url = server_.Url("/slow")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "prompt");
  EXPECT_EQ(r->stats.attempts, 2);
  EXPECT_EQ(codes, (std::vector<int>{CURLE_OPERATION_TIMEDOUT, CURLE_OK}));
  EXPECT_LT(ElapsedMs(start), 4000);
}

// A connection closed inside the response head: curl reports success with the headers it got,
// so a HEAD answer could lose its Content-Length (found by the fault proxy in front of nginx).
// The client must see the head never ended and retry.
TEST_F(HttpClientTest, AHeadCutShortIsRetriedNotTakenAsAnAnswer) {
  for (const std::string method : {"HEAD", "GET"}) {
    ScriptedResponse cut = Answer(200, "body");
    cut.headers.push_back({"X-Padding", std::string(200, 'p')});
    cut.action = ScriptedResponse::Action::kPartialHeadThenClose;
    cut.partial_bytes = 40;  // the status line and part of the next header
    server_.Enqueue(cut);
    server_.Enqueue(Answer(200, "body"));
    std::vector<int> codes;
    HttpClientOptions o = FastOptions();
    o.observer = [&](const HttpAttempt& a) { codes.push_back(a.curl_code); };
    HttpClient client(o);
    Result<HttpResponse> r = client.Send({.method = method, .url = server_.Url("/cut")});
    ASSERT_TRUE(r.ok()) << method << ": " << r.status().ToString();
    EXPECT_EQ(r->Header("Content-Length"), "4") << method;
    EXPECT_EQ(r->stats.attempts, 2) << method;
    ASSERT_EQ(codes.size(), 2u) << method;
    EXPECT_NE(codes[0], CURLE_OK) << method;
  }
  // Every attempt cut short: an error that says so, never an answer.
  for (int i = 0; i < 3; ++i) {
    ScriptedResponse cut = Answer(200, "body");
    cut.action = ScriptedResponse::Action::kPartialHeadThenClose;
    cut.partial_bytes = 30;
    server_.Enqueue(cut);
  }
  HttpClientOptions o = FastOptions();
  o.max_attempts = 3;
  HttpClient client(o);
  Result<HttpResponse> r = client.Send({.method = "HEAD", .url = server_.Url("/cut")});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("response head cut short"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("after 3 attempts"), std::string::npos)
      << r.status().ToString();
}

TEST_F(HttpClientTest, TruncatedClosedAndResetAnswersAreRetried) {
  std::string body(1000, 'x');
  ScriptedResponse partial = Answer(200, body);
  partial.action = ScriptedResponse::Action::kPartialBodyThenClose;
  partial.partial_bytes = 400;
  server_.Enqueue(partial);
  ScriptedResponse nothing;
  nothing.action = ScriptedResponse::Action::kCloseWithoutAnswer;
  server_.Enqueue(nothing);
  ScriptedResponse reset;
  reset.action = ScriptedResponse::Action::kReset;
  server_.Enqueue(reset);
  server_.Enqueue(Answer(200, body));
  std::vector<int> codes;
  HttpClientOptions o = FastOptions();
  o.observer = [&](const HttpAttempt& a) { codes.push_back(a.curl_code); };
  HttpClient client(o);
  Result<HttpResponse> r = client.Send({.url = server_.Url("/cut")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, body);
  EXPECT_EQ(r->stats.attempts, 4);
  ASSERT_EQ(codes.size(), 4u);
  EXPECT_EQ(codes[0], CURLE_PARTIAL_FILE);
  EXPECT_EQ(codes[1], CURLE_GOT_NOTHING);
  EXPECT_TRUE(codes[2] == CURLE_RECV_ERROR || codes[2] == CURLE_SEND_ERROR ||
              codes[2] == CURLE_GOT_NOTHING)
      << codes[2];
  EXPECT_EQ(codes[3], CURLE_OK);
}

TEST_F(HttpClientTest, SequentialRequestsReuseOneConnection) {
  server_.SetHandler([](const RecordedRequest& req) { return Answer(200, req.target); });
  HttpClient client(FastOptions());
  for (int i = 0; i < 10; ++i) {
    std::string path = "/seq/" + std::to_string(i);
    Result<HttpResponse> r = client.Send({.url = server_.Url(path)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, path);
    EXPECT_EQ(r->stats.connection_reused, i > 0) << i;
  }
  EXPECT_EQ(server_.connections_accepted(), 1);
  std::vector<RecordedRequest> seen = server_.requests();
  ASSERT_EQ(seen.size(), 10u);
  EXPECT_EQ(seen[9].connection_id, 1);
  EXPECT_EQ(seen[0].Header("User-Agent").value_or(""), "cutover/" + std::string("0.1.0"));
}

TEST_F(HttpClientTest, TlsToPlainHttpPortFailsCleanly) {
  HttpClient client(FastOptions());
  std::string url = "https://127.0.0.1:" + std::to_string(server_.port()) + "/";
  auto start = Clock::now();
  Result<HttpResponse> r = client.Send({.url = url});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  std::string m = r.status().message();
  EXPECT_EQ(m.rfind("GET " + url + ": SSL connect error (", 0), 0u) << m;
  std::string_view tail = "wrong version number) after 1 attempt";
  EXPECT_EQ(m.substr(m.size() - std::min(m.size(), tail.size())), tail) << m;
  EXPECT_EQ(server_.request_count(), 0u);
  EXPECT_LT(ElapsedMs(start), 5000);
}

TEST_F(HttpClientTest, HeadReturnsHeadersWithoutBody) {
  server_.Enqueue(Answer(200, std::string(321, 'b')));
  HttpClient client(FastOptions());
  Result<HttpResponse> r = client.Send({.method = "HEAD", .url = server_.Url("/obj")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("content-length").value_or(""), "321");
  EXPECT_EQ(r->body, "");
  EXPECT_EQ(server_.requests().at(0).method, "HEAD");
}

// A WebDAV-like store: PUT keeps the body, GET returns it, PROPFIND echoes the
// request body.
void ServeObjects(ScriptedHttpServer& server, std::mutex& mu,
                  std::map<std::string, std::string>& objects) {
  server.SetHandler([&](const RecordedRequest& req) {
    std::lock_guard<std::mutex> lock(mu);
    if (req.method == "PUT") {
      objects[req.target] = req.body;
      return Answer(201);
    }
    if (req.method == "PROPFIND") {
      ScriptedResponse r = Answer(207, req.body);
      r.headers = {{"Content-Type", req.Header("Content-Type").value_or("none")}};
      return r;
    }
    auto it = objects.find(req.target);
    return it == objects.end() ? Answer(404) : Answer(200, it->second);
  });
}

TEST_F(HttpClientTest, PutBodyFileAndReaderThenGetIntoSink) {
  std::mutex mu;
  std::map<std::string, std::string> objects;
  ServeObjects(server_, mu, objects);
  std::string data;
  std::mt19937_64 rng(3);
  for (int i = 0; i < (5 << 18); ++i) data.push_back(static_cast<char>(rng() & 0xff));

  HttpClient client(FastOptions());
  Result<HttpResponse> r =
      client.Send({.method = "PUT", .url = server_.Url("/o/body"), .body = data});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->stats.bytes_sent, data.size());

  testing::TempDir dir;
  std::string file = dir.Join("src.bin");
  ASSERT_TRUE(WriteFileAtomic(file, data).ok());
  HttpRequest from_file{.method = "PUT", .url = server_.Url("/o/file")};
  from_file.upload = HttpUploadSource{.file_path = file, .file_offset = 1000, .length = 500000};
  r = client.Send(from_file);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);

  HttpRequest from_reader{.method = "PUT", .url = server_.Url("/o/reader")};
  from_reader.upload =
      HttpUploadSource{.read = [&](uint64_t off, char* buf, size_t len) -> Result<size_t> {
        size_t k = std::min<size_t>(len, std::min<size_t>(77777, data.size() - off));
        std::memcpy(buf, data.data() + off, k);
        return k;
      }};  // length unknown: sent chunked
  r = client.Send(from_reader);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(objects["/o/body"] == data);
    EXPECT_TRUE(objects["/o/file"] == data.substr(1000, 500000));
    EXPECT_TRUE(objects["/o/reader"] == data);
  }
  std::vector<RecordedRequest> seen = server_.requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[2].Header("Transfer-Encoding").value_or(""), "chunked");

  std::string got;
  uint64_t expected_offset = 0;
  HttpRequest get{.url = server_.Url("/o/body")};
  get.sink = [&](uint64_t offset, std::string_view chunk) {
    EXPECT_EQ(offset, expected_offset);
    expected_offset += chunk.size();
    got.append(chunk);
    return Status::Ok();
  };
  r = client.Send(get);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->body.empty());
  EXPECT_EQ(r->stats.bytes_received, data.size());
  EXPECT_TRUE(got == data);

  // A 404 body goes to the response, not the sink.
  got.clear();
  get.url = server_.Url("/o/none");
  r = client.Send(get);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(got.empty());

  r = client.Send({.method = "PROPFIND",
                   .url = server_.Url("/o/"),
                   .headers = {{"Depth", "1"}, {"Content-Type", "application/xml"}},
                   .body = "<propfind/>"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 207);
  EXPECT_EQ(r->body, "<propfind/>");
  EXPECT_EQ(r->Header("Content-Type").value_or(""), "application/xml");
}

TEST_F(HttpClientTest, SinkAndReaderErrorsAreReturnedUnretried) {
  server_.SetHandler([](const RecordedRequest&) { return Answer(200, "payload"); });
  HttpClient client(FastOptions());
  HttpRequest get{.url = server_.Url("/g")};
  get.sink = [](uint64_t, std::string_view) { return Status::IoError("disk full"); };
  Result<HttpResponse> r = client.Send(get);
  EXPECT_EQ(r.status().ToString(), "io_error: disk full");

  HttpRequest put{.method = "PUT", .url = server_.Url("/p")};
  put.upload = HttpUploadSource{.read = [](uint64_t, char*, size_t) -> Result<size_t> {
                                  return Status::IoError("source vanished");
                                },
                                .length = 10};
  r = client.Send(put);
  EXPECT_EQ(r.status().ToString(), "io_error: source vanished");
  EXPECT_EQ(server_.request_count(),
            1u);  // the GET; the PUT's body never arrived whole
}

TEST_F(HttpClientTest, OnHeadComesBeforeTheBodyOfEveryStatusAndOnceWithoutABody) {
  server_.Enqueue({.status = 404, .headers = {{"X-Why", "gone"}}, .body = "not here"});
  server_.Enqueue({.status = 204});
  HttpClient client(FastOptions());
  std::vector<std::string> events;
  HttpRequest get{.url = server_.Url("/a")};
  get.on_head = [&](const HttpResponse& head) {
    events.push_back("head " + std::to_string(head.status) + " " +
                     head.Header("X-Why").value_or("-"));
    return Status::Ok();
  };
  get.sink = [&](uint64_t offset, std::string_view data) {
    events.push_back("body@" + std::to_string(offset) + " " + std::string(data));
    return Status::Ok();
  };
  Result<HttpResponse> r = client.Send(get);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "");  // the sink had it
  EXPECT_EQ(events, (std::vector<std::string>{"head 404 gone", "body@0 not here"}));

  events.clear();
  r = client.Send(get);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(events, (std::vector<std::string>{"head 204 -"}));

  // An error from on_head ends the request with it, unretried, and the sink sees nothing.
  server_.SetHandler([](const RecordedRequest&) { return Answer(200, "payload"); });
  events.clear();
  get.on_head = [](const HttpResponse&) { return Status::Aborted("client went away"); };
  r = client.Send(get);
  EXPECT_EQ(r.status().ToString(), "aborted: client went away");
  EXPECT_TRUE(events.empty());
}

TEST_F(HttpClientTest, SecretsNeverReachTheLog) {
  std::mutex mu;
  std::string log;
  SetLogSink([&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    log.append(line);
  });
  SetLogLevel(LogLevel::kDebug);
  server_.Enqueue(Answer(503));
  server_.Enqueue(Answer(200, "ok"));
  HttpClient client(FastOptions());
  std::string url = "http://user:hunter2@127.0.0.1:" + std::to_string(server_.port()) + "/priv";
  Result<HttpResponse> r = client.Send(
      {.url = url, .headers = {{"Authorization", "Bearer SECRET123"}, {"X-Trace", "t1"}}});
  RefusingPort refusing;
  Result<HttpResponse> refused = client.Send(
      {.url = "http://user:hunter2@127.0.0.1:" + std::to_string(refusing.port()) + "/"});
  SetLogLevel(LogLevel::kWarn);
  SetLogSink(nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(server_.requests().at(1).Header("Authorization").value_or(""), "Bearer SECRET123");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().find("hunter2"), std::string::npos);

  std::lock_guard<std::mutex> lock(mu);
  EXPECT_NE(log.find("GET http://user:[REDACTED]@127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("Authorization: [REDACTED]"), std::string::npos) << log;
  EXPECT_NE(log.find("X-Trace: t1"), std::string::npos) << log;
  EXPECT_NE(log.find("retry in"), std::string::npos) << log;
  EXPECT_EQ(log.find("SECRET123"), std::string::npos) << log;
  EXPECT_EQ(log.find("hunter2"), std::string::npos) << log;
}

TEST_F(HttpClientTest, SignsWithSigV4OrBasicAuthWithoutLoggingTheSecret) {
  server_.SetHandler([](const RecordedRequest&) { return Answer(200); });
  std::string log;
  SetLogSink([&](std::string_view line) { log.append(line); });
  SetLogLevel(LogLevel::kDebug);
  HttpClientOptions o = FastOptions();
  o.aws_sigv4 = "aws:amz:us-east-1:s3";
  o.username = "AKIDEXAMPLE";
  o.password = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY";
  Result<HttpResponse> r =
      HttpClient(o).Send({.method = "PUT", .url = server_.Url("/bucket/key"), .body = "chunk"});
  o.aws_sigv4.clear();
  o.username = "dav";
  o.password = "pw-9f8e";
  Result<HttpResponse> basic = HttpClient(o).Send({.url = server_.Url("/dav/x")});
  SetLogLevel(LogLevel::kWarn);
  SetLogSink(nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(basic.ok()) << basic.status().ToString();
  std::vector<RecordedRequest> seen = server_.requests();
  ASSERT_EQ(seen.size(), 2u);
  std::string auth = seen[0].Header("Authorization").value_or("");
  EXPECT_EQ(auth.rfind("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/", 0), 0u) << auth;
  EXPECT_NE(auth.find("/us-east-1/s3/aws4_request, SignedHeaders="), std::string::npos) << auth;
  EXPECT_TRUE(seen[0].Header("X-Amz-Date").has_value());
  EXPECT_EQ(seen[0].body, "chunk");
  EXPECT_EQ(seen[1].Header("Authorization").value_or(""), "Basic ZGF2OnB3LTlmOGU=");  // dav:pw-9f8e
  EXPECT_FALSE(log.empty());
  EXPECT_EQ(log.find("wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"), std::string::npos) << log;
  EXPECT_EQ(log.find("pw-9f8e"), std::string::npos) << log;
}

TEST_F(HttpClientTest, MultiRunsManyRequestsWithBoundedConcurrencyAndRetries) {
  std::mutex mu;
  std::map<std::string, int> seen;
  server_.SetHandler([&](const RecordedRequest& req) {
    int index = std::stoi(req.target.substr(req.target.rfind('/') + 1));
    std::lock_guard<std::mutex> lock(mu);
    if (index % 7 == 0 && seen[req.target]++ == 0) return Answer(503, "again");
    return Answer(200, "obj " + std::to_string(index));
  });
  HttpClientOptions o = FastOptions();
  o.max_in_flight = 8;
  HttpMulti multi(o);
  constexpr int kCount = 200;
  std::vector<std::string> bodies(kCount);
  std::vector<int> attempts(kCount, 0);
  int done = 0;
  for (int i = 0; i < kCount; ++i) {
    multi.Add({.url = server_.Url("/obj/" + std::to_string(i))}, [&, i](Result<HttpResponse> r) {
      ++done;
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->status, 200) << i;
      bodies[i] = r->body;
      attempts[i] = r->stats.attempts;
    });
  }
  auto start = Clock::now();
  ASSERT_TRUE(multi.Run().ok());
  EXPECT_EQ(done, kCount);
  for (int i = 0; i < kCount; ++i) {
    EXPECT_EQ(bodies[i], "obj " + std::to_string(i));
    EXPECT_EQ(attempts[i], i % 7 == 0 ? 2 : 1) << i;
  }
  EXPECT_EQ(server_.request_count(), static_cast<size_t>(kCount + (kCount + 6) / 7));
  EXPECT_LE(server_.max_open_connections(), 8);
  EXPECT_LE(server_.connections_accepted(), 8);
  EXPECT_LE(multi.max_in_flight_seen(), 8);
  EXPECT_GE(multi.max_in_flight_seen(), 2);
  EXPECT_LT(ElapsedMs(start), 10000);
}

TEST_F(HttpClientTest, MultiCallbacksMayAddAndCancel) {
  server_.SetHandler([](const RecordedRequest& req) { return Answer(200, req.target); });
  HttpClientOptions o = FastOptions();
  o.max_in_flight = 1;
  HttpMulti multi(o);
  std::vector<std::string> order;
  std::vector<std::string> aborted;
  auto expect_abort = [&](std::string path) {
    return [&, path](Result<HttpResponse> r) {
      EXPECT_EQ(r.status().ToString(), "aborted: http: GET " + server_.Url(path) + ": cancelled");
      aborted.push_back(path);
    };
  };
  multi.Add({.url = server_.Url("/first")}, [&](Result<HttpResponse> r) {
    ASSERT_TRUE(r.ok());
    order.push_back(r->body);
    multi.Add({.url = server_.Url("/added")}, expect_abort("/added"));
  });
  multi.Add({.url = server_.Url("/second")}, [&](Result<HttpResponse> r) {
    ASSERT_TRUE(r.ok());
    order.push_back(r->body);
    multi.Cancel();
  });
  multi.Add({.url = server_.Url("/third")}, expect_abort("/third"));
  ASSERT_TRUE(multi.Run().ok());
  EXPECT_EQ(order, (std::vector<std::string>{"/first", "/second"}));
  EXPECT_EQ(aborted, (std::vector<std::string>{"/third", "/added"}));
  EXPECT_EQ(server_.request_count(), 2u);

  // After a cancelled run the multi runs new work again.
  multi.Add({.url = server_.Url("/again")}, [&](Result<HttpResponse> r) {
    ASSERT_TRUE(r.ok());
    order.push_back(r->body);
  });
  ASSERT_TRUE(multi.Run().ok());
  EXPECT_EQ(order.back(), "/again");
}

}  // namespace
}  // namespace cutover
