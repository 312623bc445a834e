// Integration tests of the fault proxy: every fault mode is observed by a real libcurl client
// talking through the proxy to a real nginx.
#include "tests/harness/fault_proxy.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr size_t kFileSize = 100000;

class FaultProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = nginx_.Start();
    if (s.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(s.message());
    ASSERT_TRUE(s.ok()) << s.ToString();
    body_.resize(kFileSize);
    for (size_t i = 0; i < body_.size(); ++i) body_[i] = static_cast<char>('a' + i % 26);
    ASSERT_TRUE(WriteFileAtomic(nginx_.root() + "/file.bin", body_).ok());
  }

  // A proxy in front of nginx with `rules`; fails the test when it cannot start.
  std::unique_ptr<FaultProxy> StartProxy(std::vector<FaultRule> rules, uint64_t seed = 1,
                                         FaultGranularity g = FaultGranularity::kConnection) {
    FaultProxyOptions o;
    o.upstream_port = nginx_.port();
    o.rules = std::move(rules);
    o.seed = seed;
    o.granularity = g;
    o.retry_after_s = 7;
    o.truncate_bytes = 1000;
    o.slow_bytes_per_s = 200000;
    o.stall_ms = 0;
    return StartProxyWith(o);
  }
  std::unique_ptr<FaultProxy> StartProxyWith(const FaultProxyOptions& o) {
    auto p = std::make_unique<FaultProxy>(o);
    Status s = p->Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return p;
  }

  HttpResponse Get(const FaultProxy& p, long timeout_ms = 5000) {
    return HttpFetch({.url = p.url() + "/file.bin", .timeout_ms = timeout_ms});
  }

  NginxDav nginx_;
  std::string body_;
};

TEST_F(FaultProxyTest, NoFaultsForwardsBothWays) {
  auto p = StartProxy({});
  HttpResponse r = Get(*p);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, body_);
  HttpResponse put = HttpFetch({.method = "PUT", .url = p->url() + "/up.txt", .body = "up"});
  EXPECT_EQ(put.status, 201);
  FaultProxyCounters c = p->counters();
  EXPECT_EQ(c.connections, 2u);
  EXPECT_EQ(c.fault(FaultMode::kNone), 2u);
  EXPECT_GT(c.bytes_to_client, kFileSize);
  EXPECT_GT(c.bytes_to_upstream, 0u);
}

TEST_F(FaultProxyTest, DropGivesAnEmptyReply) {
  auto p = StartProxy({{FaultMode::kDrop, 1}});
  HttpResponse r = Get(*p);
  EXPECT_EQ(r.curl_code, CURLE_GOT_NOTHING) << r.error;
  FaultProxyCounters c = p->counters();
  EXPECT_EQ(c.fault(FaultMode::kDrop), 1u);
  EXPECT_EQ(c.bytes_to_upstream, 0u);
  EXPECT_EQ(c.bytes_to_client, 0u);
}

TEST_F(FaultProxyTest, ResetIsARecvError) {
  auto p = StartProxy({{FaultMode::kReset, 1}});
  HttpResponse r = Get(*p);
  EXPECT_EQ(r.curl_code, CURLE_RECV_ERROR) << r.error;
  EXPECT_NE(r.error.find("reset"), std::string::npos) << r.error;
  EXPECT_EQ(p->counters().fault(FaultMode::kReset), 1u);
}

TEST_F(FaultProxyTest, StallUntilClosedTimesOut) {
  auto p = StartProxy({{FaultMode::kStall, 1}});
  auto t0 = steady_clock::now();
  HttpResponse r = Get(*p, 300);
  EXPECT_EQ(r.curl_code, CURLE_OPERATION_TIMEDOUT) << r.error;
  EXPECT_GE(steady_clock::now() - t0, milliseconds(290));
  EXPECT_EQ(p->counters().bytes_to_upstream, 0u);
}

TEST_F(FaultProxyTest, StallForSomeTimeDelaysThenForwards) {
  FaultProxyOptions o;
  o.upstream_port = nginx_.port();
  o.rules = {{FaultMode::kStall, 1}};
  o.stall_ms = 400;
  auto p = StartProxyWith(o);
  auto t0 = steady_clock::now();
  HttpResponse r = Get(*p);
  EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(r.body, body_);
  EXPECT_GE(steady_clock::now() - t0, milliseconds(400));
}

TEST_F(FaultProxyTest, Http503WithRetryAfterWithoutUpstream) {
  auto p = StartProxy({{FaultMode::kHttp503, 1}});
  HttpResponse r = Get(*p);
  ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.headers["retry-after"], "7");
  EXPECT_EQ(r.headers["connection"], "close");
  EXPECT_EQ(p->counters().bytes_to_upstream, 0u);
  EXPECT_EQ(ReadFile(nginx_.dir() + "/access.log").value_or("?"), "");  // nginx saw nothing
}

TEST_F(FaultProxyTest, Http429And500Variants) {
  auto p = StartProxy({{FaultMode::kHttp429, 1}});
  HttpResponse r = Get(*p);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.headers["retry-after"], "7");
  ASSERT_TRUE(p->SetFaults({{FaultMode::kHttp500, 1}}, 1).ok());
  r = Get(*p);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.headers.count("retry-after"), 0u);
  // A PUT with a body the proxy never reads to the end still gets the answer, not a reset.
  r = HttpFetch({.method = "PUT", .url = p->url() + "/x", .body = std::string(1 << 20, 'z')});
  EXPECT_EQ(r.curl_code, CURLE_OK) << r.error;
  EXPECT_EQ(r.status, 500);
}

TEST_F(FaultProxyTest, TruncateIsAPartialFile) {
  auto p = StartProxy({{FaultMode::kTruncate, 1}});
  HttpResponse r = Get(*p);
  EXPECT_EQ(r.curl_code, CURLE_PARTIAL_FILE) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_GT(r.body.size(), 0u);
  EXPECT_LT(r.body.size(), 1000u);
  EXPECT_EQ(r.body, body_.substr(0, r.body.size()));
  EXPECT_EQ(p->counters().bytes_to_client, 1000u);
}

TEST_F(FaultProxyTest, SlowForwardsNearTheConfiguredRate) {
  auto p = StartProxy({{FaultMode::kSlow, 1}});  // 200000 B/s
  auto t0 = steady_clock::now();
  HttpResponse r = Get(*p);
  double seconds = std::chrono::duration<double>(steady_clock::now() - t0).count();
  ASSERT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(r.body, body_);
  double rate = static_cast<double>(p->counters().bytes_to_client) / seconds;
  EXPECT_GT(rate, 0.7 * 200000) << seconds << " s";
  EXPECT_LT(rate, 1.05 * 200000) << seconds << " s";
}

// Runs 20 fresh connections through a proxy with reset at rate 0.5; returns which failed.
std::vector<bool> ResetPattern(FaultProxy& p) {
  std::vector<bool> failed;
  for (int i = 0; i < 20; ++i) {
    HttpResponse r = HttpFetch({.url = p.url() + "/file.bin"});
    failed.push_back(r.curl_code != CURLE_OK);
  }
  return failed;
}

TEST_F(FaultProxyTest, RateWithSeedGivesADeterministicPattern) {
  std::vector<FaultRule> rules = {{FaultMode::kReset, 0.5}};
  auto p = StartProxy(rules, 42);
  std::vector<bool> first = ResetPattern(*p);
  std::vector<bool> expected;
  for (uint64_t i = 0; i < 20; ++i) {
    expected.push_back(FaultProxy::Decide(rules, 42, i) == FaultMode::kReset);
  }
  EXPECT_EQ(first, expected);
  size_t failures = std::count(first.begin(), first.end(), true);
  EXPECT_GT(failures, 3u);  // a rate of 0.5 over 20 draws, this seed: neither all nor none
  EXPECT_LT(failures, 17u);
  FaultProxyCounters c = p->counters();
  EXPECT_EQ(c.connections, 20u);
  EXPECT_EQ(c.fault(FaultMode::kReset), failures);
  EXPECT_EQ(c.fault(FaultMode::kNone), 20 - failures);
  std::vector<FaultMode> d = p->decisions();
  ASSERT_EQ(d.size(), 20u);
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(d[i] == FaultMode::kReset, first[i]) << i;

  // The same seed again (SetFaults restarts the sequence) repeats it; another seed differs.
  ASSERT_TRUE(p->SetFaults(rules, 42).ok());
  EXPECT_EQ(ResetPattern(*p), first);
  ASSERT_TRUE(p->SetFaults(rules, 43).ok());
  EXPECT_NE(ResetPattern(*p), first);
}

size_t Discard(char*, size_t size, size_t n, void*) { return size * n; }

TEST_F(FaultProxyTest, PerRequestDecisionsOnAKeptAliveConnection) {
  std::vector<FaultRule> rules = {{FaultMode::kHttp503, 0.5}};
  auto p = StartProxy(rules, 7, FaultGranularity::kHttpRequest);
  CURL* curl = curl_easy_init();
  ASSERT_NE(curl, nullptr);
  std::string url = p->url() + "/file.bin";
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Discard);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 5000L);
  std::vector<long> statuses;
  uint64_t expected_connections = 1;
  for (uint64_t i = 0; i < 12; ++i) {
    ASSERT_EQ(curl_easy_perform(curl), CURLE_OK);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    statuses.push_back(status);
    bool fault = FaultProxy::Decide(rules, 7, i) == FaultMode::kHttp503;
    EXPECT_EQ(status, fault ? 503 : 200) << i;
    if (fault && i + 1 < 12) expected_connections++;  // each 503 closes its connection
  }
  curl_easy_cleanup(curl);
  FaultProxyCounters c = p->counters();
  EXPECT_EQ(c.requests, 12u);
  EXPECT_EQ(c.connections, expected_connections);
  EXPECT_LT(c.connections, 12u);  // clean requests did reuse the connection
  EXPECT_EQ(c.fault(FaultMode::kHttp503),
            static_cast<uint64_t>(std::count(statuses.begin(), statuses.end(), 503)));
}

// With every request failing and a cap of 2, each request line fails twice and then passes:
// a client retrying more than twice always gets through, however requests interleave.
TEST_F(FaultProxyTest, MaxFaultsPerRequestSparesARequestAfterItsShare) {
  ASSERT_TRUE(WriteFileAtomic(nginx_.root() + "/other.bin", "other").ok());
  FaultProxyOptions o;
  o.upstream_port = nginx_.port();
  o.granularity = FaultGranularity::kHttpRequest;
  o.rules = {{FaultMode::kHttp503, 1.0}};
  o.retry_after_s = 0;
  o.max_faults_per_request = 2;
  auto p = StartProxyWith(o);
  std::vector<long> file_statuses;
  std::vector<long> other_statuses;
  for (int i = 0; i < 4; ++i) {
    file_statuses.push_back(HttpFetch({.url = p->url() + "/file.bin"}).status);
    other_statuses.push_back(HttpFetch({.url = p->url() + "/other.bin"}).status);
  }
  EXPECT_EQ(file_statuses, (std::vector<long>{503, 503, 200, 200}));
  EXPECT_EQ(other_statuses, (std::vector<long>{503, 503, 200, 200}));
  FaultProxyCounters c = p->counters();
  EXPECT_EQ(c.fault(FaultMode::kHttp503), 4u);
  EXPECT_EQ(c.spared, 4u);
  EXPECT_EQ(c.fault(FaultMode::kNone), 4u);
  // SetFaults starts the count again.
  ASSERT_TRUE(p->SetFaults({{FaultMode::kHttp503, 1.0}}, 1).ok());
  EXPECT_EQ(HttpFetch({.url = p->url() + "/file.bin"}).status, 503);
}

TEST_F(FaultProxyTest, PerRequestFramingFollowsChunkedAndSizedBodies) {
  // No faults: one decision per request shows the bodies were not taken for new requests.
  auto p = StartProxy({}, 1, FaultGranularity::kHttpRequest);
  CURL* curl = curl_easy_init();
  ASSERT_NE(curl, nullptr);
  curl_slist* chunked = curl_slist_append(nullptr, "Transfer-Encoding: chunked");
  std::string payload(50000, 'q');
  size_t offset = 0;
  auto reader = +[](char* buf, size_t size, size_t n, void* user) -> size_t {
    auto* st = static_cast<std::pair<std::string*, size_t*>*>(user);
    size_t left = st->first->size() - *st->second;
    size_t k = std::min<size_t>(left, std::min<size_t>(size * n, 7000));
    std::memcpy(buf, st->first->data() + *st->second, k);
    *st->second += k;
    return k;
  };
  std::pair<std::string*, size_t*> state(&payload, &offset);
  std::string put_url = p->url() + "/chunked.bin";
  curl_easy_setopt(curl, CURLOPT_URL, put_url.c_str());
  curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, chunked);
  curl_easy_setopt(curl, CURLOPT_READFUNCTION, reader);
  curl_easy_setopt(curl, CURLOPT_READDATA, &state);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Discard);
  ASSERT_EQ(curl_easy_perform(curl), CURLE_OK);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  EXPECT_EQ(status, 201);
  // A sized PUT, then a GET, on the same connection.
  offset = 0;
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(payload.size()));
  ASSERT_EQ(curl_easy_perform(curl), CURLE_OK);
  curl_easy_setopt(curl, CURLOPT_UPLOAD, 0L);
  curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  ASSERT_EQ(curl_easy_perform(curl), CURLE_OK);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  EXPECT_EQ(status, 200);
  curl_easy_cleanup(curl);
  curl_slist_free_all(chunked);
  FaultProxyCounters c = p->counters();
  EXPECT_EQ(c.connections, 1u);
  EXPECT_EQ(c.requests, 3u);  // the bodies were not taken for requests
  EXPECT_EQ(c.decisions, 3u);
  EXPECT_EQ(ReadFile(nginx_.root() + "/chunked.bin").value_or(""), payload);
}

TEST_F(FaultProxyTest, UpstreamDownClosesTheClient) {
  FaultProxyOptions o;
  o.upstream_port = FreeLoopbackPort();
  auto p = StartProxyWith(o);
  HttpResponse r = HttpFetch({.url = p->url() + "/", .timeout_ms = 2000});
  EXPECT_EQ(r.curl_code, CURLE_GOT_NOTHING) << r.error;
  EXPECT_EQ(p->counters().upstream_connect_errors, 1u);
}

// The cutover-faultproxy binary: under $CUTOVER_BINARY_DIR, else next to this test binary's
// directory (build/tests/harness -> build/tests/tools).
std::string FaultProxyBinary() {
  std::string bin = BinaryDir() + "/tests/tools/cutover-faultproxy";
  if (::access(bin.c_str(), X_OK) == 0) return bin;
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path().parent_path() / "tools" / "cutover-faultproxy").string();
}

// The standalone binary scripts use: it prints its port, proxies, and prints the counters on
// SIGTERM.
TEST_F(FaultProxyTest, StandaloneBinaryPrintsCountersOnSigterm) {
  std::string bin = FaultProxyBinary();
  if (::access(bin.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL(bin + " not built");
  TempDir tmp;
  ChildProcess proxy;
  ASSERT_TRUE(proxy
                  .Spawn({bin, "--listen", "127.0.0.1:0", "--upstream",
                          "127.0.0.1:" + std::to_string(nginx_.port()), "--mode", "http_503:0.5",
                          "--seed", "3", "--port-file", tmp.Join("port")},
                         tmp.Join("out.log"))
                  .ok());
  auto deadline = steady_clock::now() + milliseconds(5000);
  while (!ReadFile(tmp.Join("port")).ok() && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  Result<std::string> port = ReadFile(tmp.Join("port"));
  ASSERT_TRUE(port.ok()) << ReadFile(tmp.Join("out.log")).value_or("");
  std::string url = "http://127.0.0.1:" + std::to_string(std::stoi(*port)) + "/file.bin";
  std::vector<FaultRule> rules = {{FaultMode::kHttp503, 0.5}};
  int expected_503 = 0;
  for (uint64_t i = 0; i < 6; ++i) {
    bool fault = FaultProxy::Decide(rules, 3, i) == FaultMode::kHttp503;
    expected_503 += fault ? 1 : 0;
    EXPECT_EQ(HttpFetch({.url = url}).status, fault ? 503 : 200) << i;
  }
  proxy.Stop();
  EXPECT_EQ(proxy.exit_description(), "exit 0");
  std::string out = ReadFile(tmp.Join("out.log")).value_or("");
  EXPECT_NE(out.find("listening 127.0.0.1:" + std::to_string(std::stoi(*port)) + "\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("connections=6 requests=0 decisions=6 "), std::string::npos) << out;
  EXPECT_NE(out.find(" http_503=" + std::to_string(expected_503) + " "), std::string::npos) << out;
}

TEST(FaultProxyToolTest, BadModeExitsTwoWithTheMessage) {
  std::string bin = FaultProxyBinary();
  if (::access(bin.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL(bin + " not built");
  std::string out;
  int rc = RunShell(bin + " --upstream 127.0.0.1:1 --mode nope:0.1", &out);
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(out,
            "cutover-faultproxy: unknown fault mode 'nope' (drop, reset, stall, http_503, "
            "http_429, http_500, truncate, slow)\n");
}

TEST(FaultRulesTest, ParsesTheCommandLineForm) {
  Result<std::vector<FaultRule>> r = ParseFaultRules("reset:0.1,http_503:0.05,slow:0.5");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].mode, FaultMode::kReset);
  EXPECT_DOUBLE_EQ((*r)[0].rate, 0.1);
  EXPECT_EQ((*r)[1].mode, FaultMode::kHttp503);
  EXPECT_EQ((*r)[2].mode, FaultMode::kSlow);
  EXPECT_DOUBLE_EQ((*r)[2].rate, 0.5);
  Result<std::vector<FaultRule>> always = ParseFaultRules("drop");
  ASSERT_TRUE(always.ok());
  ASSERT_EQ(always->size(), 1u);
  EXPECT_DOUBLE_EQ((*always)[0].rate, 1.0);
  EXPECT_EQ(ParseFaultRules("")->size(), 0u);
}

TEST(FaultRulesTest, ErrorsArePinned) {
  EXPECT_EQ(ParseFaultRules("boom:0.1").status().message(),
            "unknown fault mode 'boom' (drop, reset, stall, http_503, http_429, http_500, "
            "truncate, slow)");
  EXPECT_EQ(ParseFaultRules("reset:1.5").status().message(),
            "fault rate '1.5' is not a number in 0..1");
  EXPECT_EQ(ParseFaultRules("reset:x").status().message(),
            "fault rate 'x' is not a number in 0..1");
  EXPECT_EQ(ParseFaultRules("reset:0.6,drop:0.6").status().message(),
            "fault rates sum to more than 1 in 'reset:0.6,drop:0.6'");
}

TEST(FaultRulesTest, DecideFollowsTheRatesOverManyDraws) {
  std::vector<FaultRule> rules = {{FaultMode::kDrop, 0.1}, {FaultMode::kSlow, 0.3}};
  int drop = 0, slow = 0, none = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    switch (FaultProxy::Decide(rules, 5, i)) {
      case FaultMode::kDrop:
        drop++;
        break;
      case FaultMode::kSlow:
        slow++;
        break;
      case FaultMode::kNone:
        none++;
        break;
      default:
        ADD_FAILURE() << "unexpected mode";
    }
  }
  EXPECT_NEAR(drop, 1000, 150);
  EXPECT_NEAR(slow, 3000, 200);
  EXPECT_NEAR(none, 6000, 200);
}

TEST(FaultProxyStartTest, BadUpstreamIsInvalidArgument) {
  FaultProxyOptions o;
  o.upstream_host = "example.com";
  o.upstream_port = 80;
  FaultProxy p(o);
  Status s = p.Start();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "upstream host 'example.com' is not an IPv4 address");
}

}  // namespace
}  // namespace cutover::testing
