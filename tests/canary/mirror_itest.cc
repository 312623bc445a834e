// `canary mirror` end to end on loopback: three HTTP backends written for the test stand for a
// model server. The two primaries answer with the same score and a request id that is new every
// response; one candidate's score drifts in its last bits (a float32 rounding of the primary's),
// another's is 5% off on every fourth request. The mirror runs in process (MirrorProxy) and as
// the cutover binary.
#include "canary/mirror_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/file_util.h"
#include "core/http_client.h"
#include "core/json.h"
#include "tests/canary/test_backend.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/scripted_http_server.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover::canary {
namespace {

using cutover::testing::RecordedRequest;
using cutover::testing::ScriptedHttpServer;
using cutover::testing::ScriptedResponse;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr double kScore = 0.7853981633974483;
// kScore rounded to float32 and printed back as a double: a GPU kernel's last-bit drift.
constexpr double kDriftedScore = 0.78539818525314331;

enum class Kind { kPrimary, kDrifting, kWrong, kSlow };

// The request number a client put in ?i=N.
int RequestNumber(const std::string& target) {
  size_t at = target.find("i=");
  return at == std::string::npos ? -1 : std::atoi(target.c_str() + at + 2);
}

// One backend: answers GET and POST /infer?i=N with {"id","score","label"}, anything else with
// 404; remembers every body it sent by request number.
class Backend {
 public:
  Backend(std::string name, Kind kind) : name_(std::move(name)), kind_(kind) {}
  // The server thread goes first: its handler writes the members below.
  ~Backend() { server_.Stop(); }
  Status Start() {
    server_.SetHandler([this](const RecordedRequest& r) { return Handle(r); });
    return server_.Start();
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }
  size_t request_count() const { return server_.request_count(); }
  std::vector<RecordedRequest> requests() const { return server_.requests(); }
  std::string SentBody(int i) {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_[i];
  }

 private:
  ScriptedResponse Handle(const RecordedRequest& r) {
    if (r.target.rfind("/infer", 0) != 0) return {.status = 404, .body = "not here"};
    int i = RequestNumber(r.target);
    double score = kScore;
    if (kind_ == Kind::kDrifting) score = kDriftedScore;
    if (kind_ == Kind::kWrong && i % 4 == 0) score = kScore * 1.05;
    char buf[256];
    std::snprintf(buf, sizeof buf, R"({"id":"%s-%d","score":%.17g,"label":"cat"})", name_.c_str(),
                  ++counter_, score);
    std::lock_guard<std::mutex> lock(mu_);
    sent_[i] = buf;
    return {.status = 200,
            .headers = {{"Content-Type", "application/json"}},
            .body = buf,
            .delay = kind_ == Kind::kSlow ? 100ms : 0ms};
  }

  std::string name_;
  Kind kind_;
  ScriptedHttpServer server_;
  std::atomic<int> counter_{0};
  std::mutex mu_;
  std::map<int, std::string> sent_;
};

// Writes `bytes` to 127.0.0.1:`port` on a fresh connection and returns what comes back until the
// server closes it.
std::string RawExchange(int port, const std::string& bytes) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

const MirrorFieldResult* Field(const MirrorSummary& s, const std::string& path) {
  for (const MirrorFieldResult& f : s.fields) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

class MirrorItest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(primary_.Start().ok());
    ASSERT_TRUE(secondary_.Start().ok());
    ASSERT_TRUE(drifting_.Start().ok());
    ASSERT_TRUE(wrong_.Start().ok());
    ASSERT_TRUE(slow_.Start().ok());
  }

  MirrorProxyOptions Options(const Backend& candidate) {
    MirrorProxyOptions o;
    o.listen = "127.0.0.1:0";
    o.primary = primary_.Url();
    o.secondary = secondary_.Url();
    o.candidate = candidate.Url();
    o.compare.max_diff_rate = 0.01;
    return o;
  }

  // Sends `n` requests through the proxy at `port` from two client threads; checks every client
  // got the primary's answer to its request.
  void SendThrough(int port, int n, const std::string& method = "GET") {
    HttpClient client(HttpClientOptions{.max_attempts = 1});
    std::atomic<int> next{0};
    auto loop = [&] {
      for (int i = next++; i < n; i = next++) {
        HttpRequest r{
            .method = method,
            .url = "http://127.0.0.1:" + std::to_string(port) + "/infer?i=" + std::to_string(i),
            .headers = {{"Authorization", "Bearer secret-token"},
                        {"Cookie", "session=cookie-secret"}}};
        if (method == "POST") r.body = R"({"prompt":"x"})";
        Result<HttpResponse> resp = client.Send(r);
        ASSERT_TRUE(resp.ok()) << resp.status().ToString();
        EXPECT_EQ(resp->status, 200);
        EXPECT_EQ(resp->body, primary_.SentBody(i)) << "request " << i;
        EXPECT_THAT(resp->body, HasSubstr(R"("id":"primary-)"));
        EXPECT_EQ(resp->Header("Content-Type").value_or(""), "application/json");
      }
    };
    std::thread a(loop), b(loop);
    a.join();
    b.join();
  }

  Backend primary_{"primary", Kind::kPrimary};
  Backend secondary_{"secondary", Kind::kPrimary};
  Backend drifting_{"drifting", Kind::kDrifting};
  Backend wrong_{"wrong", Kind::kWrong};
  Backend slow_{"slow", Kind::kSlow};  // a candidate that takes 100 ms per answer
};

TEST_F(MirrorItest, DriftInTheLastBitsPassesAndTheRequestIdIsNoisy) {
  MirrorProxy proxy(Options(drifting_));
  ASSERT_TRUE(proxy.CheckUpstreams().ok());
  ASSERT_TRUE(proxy.Start().ok());
  SendThrough(proxy.port(), 40);
  proxy.Stop();
  MirrorTraffic t = proxy.traffic();
  EXPECT_EQ(t.received, 40);
  EXPECT_EQ(t.mirrored, 40);
  EXPECT_EQ(t.compared, 40);
  EXPECT_EQ(t.dropped, 0);
  EXPECT_EQ(t.copy_errors, 0);
  EXPECT_EQ(secondary_.request_count(), 41u);  // the start check, then 40 copies
  EXPECT_EQ(drifting_.request_count(), 41u);
  // Copies carry the client's headers, Authorization included.
  EXPECT_EQ(drifting_.requests().back().Header("Authorization").value_or(""),
            "Bearer secret-token");

  MirrorSummary s = proxy.Summarize();
  EXPECT_EQ(s.verdict, MirrorVerdict::kPass);
  const MirrorFieldResult* score = Field(s, "score");
  ASSERT_NE(score, nullptr);
  EXPECT_EQ(score->comparisons, 40);
  EXPECT_EQ(score->candidate_diffs, 0);
  EXPECT_EQ(score->verdict, FieldVerdict::kOk);
  ASSERT_TRUE(score->max_rel_diff.has_value());
  EXPECT_GT(*score->max_rel_diff, 0.0);  // it did drift
  EXPECT_LT(*score->max_rel_diff, 1e-6);
  const MirrorFieldResult* id = Field(s, "id");
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->noise_diffs, 40);
  EXPECT_EQ(id->verdict, FieldVerdict::kNoisy);
  EXPECT_EQ(Field(s, "label")->candidate_diffs, 0);
}

TEST_F(MirrorItest, AScoreFivePercentOffIsFlaggedAtItsRate) {
  MirrorProxy proxy(Options(wrong_));
  ASSERT_TRUE(proxy.CheckUpstreams().ok());
  ASSERT_TRUE(proxy.Start().ok());
  SendThrough(proxy.port(), 40);
  proxy.Stop();
  MirrorSummary s = proxy.Summarize();
  EXPECT_EQ(s.compared, 40);
  EXPECT_EQ(s.verdict, MirrorVerdict::kFail);
  EXPECT_EQ(s.failing_fields, 1);
  ASSERT_FALSE(s.fields.empty());
  const MirrorFieldResult& score = s.fields[0];
  EXPECT_EQ(score.path, "score");
  EXPECT_EQ(score.verdict, FieldVerdict::kDiffers);
  EXPECT_EQ(score.candidate_diffs, 10);  // requests 0, 4, ..., 36
  EXPECT_DOUBLE_EQ(score.candidate_rate, 0.25);
  EXPECT_DOUBLE_EQ(score.excess_rate, 0.25);
  EXPECT_NEAR(*score.max_rel_diff, 0.05 / 1.05, 1e-9);
  EXPECT_EQ(Field(s, "id")->verdict, FieldVerdict::kNoisy);

  MirrorRunInfo run{.primary = primary_.Url(),
                    .secondary = secondary_.Url(),
                    .candidate = wrong_.Url(),
                    .methods = {"GET", "HEAD"},
                    .started_at = "2026-12-05T07:00:00Z",
                    .finished_at = "2026-12-05T07:00:01Z",
                    .traffic = proxy.traffic()};
  CUTOVER_EXPECT_VALID(MirrorReportJson(run, MirrorCompareOptions{}, s), "mirror-report-1.json");
}

TEST_F(MirrorItest, MethodsNotMirroredAreOnlyProxied) {
  MirrorProxy proxy(Options(drifting_));  // GET and HEAD mirrored
  ASSERT_TRUE(proxy.Start().ok());
  SendThrough(proxy.port(), 6, "POST");
  HttpClient client(HttpClientOptions{.max_attempts = 1});
  Result<HttpResponse> head =
      client.Send({.method = "HEAD",
                   .url = "http://127.0.0.1:" + std::to_string(proxy.port()) + "/infer?i=99"});
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->body, "");
  proxy.Stop();
  MirrorTraffic t = proxy.traffic();
  EXPECT_EQ(t.received, 7);
  EXPECT_EQ(t.not_mirrored, 6);
  EXPECT_EQ(t.mirrored, 1);
  EXPECT_EQ(primary_.request_count(), 7u);
  // Only the HEAD was copied; the POSTs reached the primary with their bodies.
  ASSERT_EQ(drifting_.request_count(), 1u);
  EXPECT_EQ(drifting_.requests()[0].method, "HEAD");
  EXPECT_EQ(primary_.requests()[0].body, R"({"prompt":"x"})");
}

TEST_F(MirrorItest, APrimaryThatStopsAnsweringGivesTheClientA502) {
  MirrorProxyOptions o = Options(drifting_);
  {
    // A port nothing listens on: bind one, then close it.
    ScriptedHttpServer gone;
    ASSERT_TRUE(gone.Start().ok());
    o.primary = gone.Url("");
  }
  MirrorProxy proxy(o);
  Status check = proxy.CheckUpstreams();
  EXPECT_EQ(check.code(), Code::kUnavailable);
  EXPECT_THAT(check.message(),
              HasSubstr("mirror: the primary (" + o.primary + ") does not answer: GET " +
                        o.primary + ": Couldn't connect to server"));
  ASSERT_TRUE(proxy.Start().ok());
  HttpClient client(HttpClientOptions{.max_attempts = 1});
  Result<HttpResponse> r =
      client.Send({.url = "http://127.0.0.1:" + std::to_string(proxy.port()) + "/infer?i=1"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 502);
  EXPECT_EQ(r->body, "mirror: the primary did not answer\n");
  proxy.Stop();
  EXPECT_EQ(proxy.traffic().primary_errors, 1);
  EXPECT_EQ(proxy.traffic().mirrored, 0);
  EXPECT_EQ(proxy.Summarize().verdict, MirrorVerdict::kInconclusive);
}

TEST_F(MirrorItest, AFullQueueDropsCopiesWithoutHoldingClients) {
  MirrorProxyOptions o = Options(slow_);
  o.queue_capacity = 1;
  o.workers = 1;
  MirrorProxy proxy(o);
  ASSERT_TRUE(proxy.Start().ok());
  auto start = std::chrono::steady_clock::now();
  SendThrough(proxy.port(), 60);
  auto took = std::chrono::steady_clock::now() - start;
  // Had clients waited for the copies, 60 of them at 100 ms each would take 6 s.
  EXPECT_LT(took, 2s);
  proxy.Stop();
  MirrorTraffic t = proxy.traffic();
  EXPECT_EQ(t.received, 60);
  EXPECT_EQ(t.mirrored + t.dropped, 60);
  EXPECT_GE(t.dropped, 40);
  EXPECT_EQ(t.compared, t.mirrored);
  EXPECT_EQ(static_cast<int64_t>(slow_.request_count()), t.mirrored);
}

TEST_F(MirrorItest, MalformedAndOversizedRequestsGetAnErrorAndAClose) {
  MirrorProxyOptions o = Options(drifting_);
  o.max_request_body = 16;
  MirrorProxy proxy(o);
  ASSERT_TRUE(proxy.Start().ok());
  std::string bad = RawExchange(proxy.port(), "NOT HTTP AT ALL\r\n\r\n");
  EXPECT_THAT(bad, ::testing::StartsWith("HTTP/1.1 400 Bad Request\r\n"));
  EXPECT_THAT(bad, ::testing::EndsWith("\r\n\r\nmirror: malformed request\n"));
  std::string big = RawExchange(
      proxy.port(),
      "POST /infer?i=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 32\r\n\r\n" + std::string(32, 'x'));
  EXPECT_THAT(big, ::testing::StartsWith("HTTP/1.1 413 Payload Too Large\r\n"));
  EXPECT_THAT(big, ::testing::EndsWith("\r\n\r\nmirror: request body too large\n"));
  proxy.Stop();
  EXPECT_EQ(primary_.request_count(), 0u);
  EXPECT_EQ(proxy.traffic().received, 0);
}

// The cutover binary: exit codes, and the report it writes.
class MirrorBinaryItest : public MirrorItest {
 protected:
  void SetUp() override {
    MirrorItest::SetUp();
    bin_ = cutover::testing::BinaryDir() + "/apps/cutover/cutover";
    if (::access(bin_.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL("cutover not built: " + bin_);
  }

  // Starts `cutover canary mirror` with `args`, waits for its "listening on" line, sends `n`
  // GETs, sends SIGTERM when `terminate`, and waits for it to exit. Returns how it ended; *log
  // gets what it printed.
  std::string RunMirror(const std::vector<std::string>& args, int n, std::string* log,
                        bool terminate = false) {
    std::vector<std::string> argv = {bin_, "canary", "mirror", "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string log_path = dir_.Join("mirror.log");
    cutover::testing::ChildProcess child;
    EXPECT_TRUE(child.Spawn(argv, log_path).ok());
    const int port = testing::WaitForMirrorPort(log_path, child);
    if (port != 0) SendThrough(port, n);
    if (terminate && child.Running()) child.Signal(SIGTERM);
    for (int i = 0; i < 400 && child.Running(); ++i) std::this_thread::sleep_for(50ms);
    *log = ReadFile(log_path).value_or("");
    return child.exit_description();
  }

  std::string bin_;
  cutover::testing::TempDir dir_;
};

TEST_F(MirrorBinaryItest, ExitsOneOnAWrongCandidateAndWritesTheReport) {
  std::string log;
  std::string out = dir_.Join("report.json");
  std::string how =
      RunMirror({"--primary", primary_.Url(), "--secondary", secondary_.Url(), "--candidate",
                 wrong_.Url(), "--requests", "20", "--out", out, "--log-level", "debug"},
                20, &log);
  EXPECT_EQ(how, "exit 1") << log;
  EXPECT_THAT(log, HasSubstr("requests 20, mirrored 20, compared 20, dropped 0"));
  EXPECT_THAT(log, HasSubstr("  differs  25.00%   25.00%     0.00%"));
  EXPECT_THAT(log, HasSubstr("verdict: fail\n"));
  // The client's Authorization and Cookie went upstream but never into the output, even at the
  // debug log level, which logs each upstream request's headers.
  EXPECT_THAT(log, HasSubstr("http: > Authorization: "));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("secret-token")));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("cookie-secret")));
  EXPECT_EQ(wrong_.requests().back().Header("Cookie").value_or(""), "session=cookie-secret");
  Result<nlohmann::json> doc = LoadJsonFile(out);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ((*doc)["verdict"], "fail");
  EXPECT_EQ((*doc)["fields"][0]["field"], "score");
  EXPECT_EQ((*doc)["fields"][0]["candidate_diffs"], 5);
  CUTOVER_EXPECT_VALID(*doc, "mirror-report-1.json");
}

TEST_F(MirrorBinaryItest, ExitsZeroOnADriftingCandidate) {
  std::string log;
  std::string how = RunMirror({"--primary", primary_.Url(), "--secondary", secondary_.Url(),
                               "--candidate", drifting_.Url(), "--requests", "20", "--json"},
                              20, &log);
  EXPECT_EQ(how, "exit 0") << log;
  size_t brace = log.find('{');
  ASSERT_NE(brace, std::string::npos) << log;
  Result<nlohmann::json> doc = ParseJson(log.substr(brace), "stdout");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ((*doc)["verdict"], "pass");
  EXPECT_EQ((*doc)["noisy_fields"], 1);
}

TEST_F(MirrorBinaryItest, SigtermStopsItAndPrintsTheReport) {
  std::string log;
  std::string how = RunMirror({"--primary", primary_.Url(), "--secondary", secondary_.Url(),
                               "--candidate", drifting_.Url(), "--ignore", "id"},
                              12, &log, /*terminate=*/true);
  EXPECT_EQ(how, "exit 0") << log;
  EXPECT_THAT(log, HasSubstr("requests 12, mirrored 12, compared 12, dropped 0"));
  // With the id ignored no field is noisy.
  EXPECT_THAT(log, HasSubstr("fields 3, 0 differ, 0 noisy\n"));
  EXPECT_THAT(log, HasSubstr("verdict: pass\n"));
}

TEST_F(MirrorBinaryItest, AnUnreachableCandidateExitsThreeBeforeListening) {
  std::string gone_url;
  {
    ScriptedHttpServer gone;
    ASSERT_TRUE(gone.Start().ok());
    gone_url = gone.Url("");
  }
  std::string out;
  int rc = cutover::testing::RunShell(bin_ + " canary mirror --listen 127.0.0.1:0 --primary " +
                                          primary_.Url() + " --secondary " + secondary_.Url() +
                                          " --candidate " + gone_url,
                                      &out);
  EXPECT_EQ(rc, 3) << out;
  EXPECT_THAT(out, HasSubstr("mirror: the candidate (" + gone_url + ") does not answer"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("listening on")));
}

TEST_F(MirrorBinaryItest, BadUsageExitsTwoWithOneLine) {
  struct Case {
    std::string args, message;
  };
  std::string up = " --primary " + primary_.Url() + " --secondary " + secondary_.Url();
  for (const Case& c : std::vector<Case>{
           {up + " --candidate localhost:8000",
            "mirror: --candidate 'localhost:8000': expected an http:// or https:// URL"},
           {up + " --candidate " + wrong_.Url() + " --rel-tol -1",
            "mirror: --rel-tol must be a finite number >= 0, got -1"},
           {up + " --candidate " + wrong_.Url() + " --listen 8080",
            "mirror: --listen '8080': expected HOST:PORT (an IP address or localhost)"},
           {up + " --candidate " + wrong_.Url() + " --duration 5x",
            "mirror: --duration: bad duration '5x'"},
       }) {
    std::string out;
    int rc = cutover::testing::RunShell(bin_ + " canary mirror" + c.args, &out);
    EXPECT_EQ(rc, 2) << c.args << "\n" << out;
    EXPECT_THAT(out, HasSubstr(c.message)) << c.args;
  }
}

}  // namespace
}  // namespace cutover::canary
