// `canary mirror` with answers too large to hold: a 400 MB primary answer that pauses half-way, an
// answer without a length (closed to end it), and a candidate whose body never ends. The cutover
// binary runs the mirror; its peak RSS is sampled from /proc while it runs. The client must get
// the primary's bytes unchanged and its first bytes before the primary has sent its last, and the
// mirror must stay within a bound far below the bodies it passed on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
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
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover::canary {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr uint64_t kHuge = 400ull << 20;    // the primary's large answer
constexpr uint64_t kNoLength = 3ull << 20;  // an answer ended by closing the connection
constexpr uint64_t kSmall = 1024;

// The byte at `offset` of every generated body: not periodic within a block, so a dropped or
// repeated block is seen.
uint8_t PatternByte(uint64_t offset) {
  return static_cast<uint8_t>(((offset * 0x9E3779B1ull) >> 24) ^ (offset >> 20));
}

void FillPattern(uint64_t offset, char* buf, size_t n) {
  for (size_t i = 0; i < n; ++i) buf[i] = static_cast<char>(PatternByte(offset + i));
}

bool SendAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t k = ::send(fd, data, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    data += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// What a path answers with.
enum class Body {
  kHuge,      // Content-Length kHuge; half-way it waits (up to 10 s) for `resume`
  kNoLength,  // kNoLength bytes, no Content-Length, then close
  kSmall,     // Content-Length kSmall
  kEndless,   // chunked, never ends (until the reader goes away)
};

// An HTTP/1.1 server that writes generated bodies as it goes, never holding one: one thread per
// connection, one request per connection ("Connection: close").
class StreamServer {
 public:
  StreamServer(std::map<std::string, Body> paths, std::atomic<bool>* resume)
      : paths_(std::move(paths)), resume_(resume) {}
  ~StreamServer() { Stop(); }

  Status Start() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return Status::IoError("stream server: cannot listen");
    }
    port_ = ntohs(addr.sin_port);
    accept_ = std::thread([this] { AcceptLoop(); });
    return Status::Ok();
  }

  void Stop() {
    if (fd_ < 0) return;
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    accept_.join();
    ::close(fd_);
    fd_ = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int c : conns_) ::shutdown(c, SHUT_RDWR);
    }
    for (std::thread& t : threads_) t.join();
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }

 private:
  void AcceptLoop() {
    while (!stopping_) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      conns_.push_back(c);
      threads_.emplace_back([this, c] { Serve(c); });
    }
  }

  void Serve(int c) {
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      head.append(buf, static_cast<size_t>(n));
    }
    size_t sp = head.find(' ');
    size_t sp2 = sp == std::string::npos ? sp : head.find(' ', sp + 1);
    std::string method = head.substr(0, sp);
    std::string path = sp2 == std::string::npos ? "" : head.substr(sp + 1, sp2 - sp - 1);
    ++requests_;
    auto it = paths_.find(path);
    if (it == paths_.end()) {
      std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
      SendAll(c, r.data(), r.size());  // the mirror's start-up check
    } else if (method == "GET") {
      Answer(c, it->second);
    }
    ::shutdown(c, SHUT_RDWR);
    ::close(c);
  }

  void Answer(int c, Body body) {
    std::string h = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n";
    uint64_t length = body == Body::kHuge ? kHuge : body == Body::kSmall ? kSmall : kNoLength;
    if (body == Body::kHuge || body == Body::kSmall) {
      h += "Content-Length: " + std::to_string(length) + "\r\n";
    }
    if (body == Body::kEndless) h += "Transfer-Encoding: chunked\r\n";
    h += "Connection: close\r\n\r\n";
    if (!SendAll(c, h.data(), h.size())) return;
    std::vector<char> block(64 << 10);
    if (body == Body::kEndless) {
      for (uint64_t off = 0; !stopping_; off += block.size()) {
        FillPattern(off, block.data(), block.size());
        char line[32];
        int n = std::snprintf(line, sizeof line, "%zx\r\n", block.size());
        if (!SendAll(c, line, static_cast<size_t>(n)) || !SendAll(c, block.data(), block.size()) ||
            !SendAll(c, "\r\n", 2)) {
          return;
        }
      }
      return;
    }
    for (uint64_t off = 0; off < length;) {
      if (body == Body::kHuge && off == length / 2) {
        for (int i = 0; i < 1000 && !resume_->load() && !stopping_; ++i) {
          std::this_thread::sleep_for(10ms);
        }
      }
      uint64_t until = off < length / 2 ? length / 2 : length;  // a block never spans the pause
      size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), until - off));
      FillPattern(off, block.data(), n);
      if (!SendAll(c, block.data(), n)) return;
      off += n;
    }
  }

  std::map<std::string, Body> paths_;
  std::atomic<bool>* resume_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> requests_{0};
  std::thread accept_;
  std::mutex mu_;
  std::vector<int> conns_;
  std::vector<std::thread> threads_;
};

// The VmHWM line of /proc/PID/status in KiB, or -1 once the process is gone.
long PeakRssKib(pid_t pid) {
  Result<std::string> status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  if (!status.ok()) return -1;
  size_t at = status->find("VmHWM:");
  return at == std::string::npos ? -1 : std::atol(status->c_str() + at + 6);
}

// What a client got: its status, length, whether every byte matched the pattern, and how long
// the first byte took.
struct Fetched {
  long status = 0;
  uint64_t bytes = 0;
  bool pattern_ok = true;
  std::optional<std::string> content_length;
  std::chrono::milliseconds first_byte{-1};
};

Fetched FetchThrough(int port, const std::string& path, std::atomic<bool>* first_byte_seen) {
  HttpClient client(HttpClientOptions{.max_attempts = 1});
  Fetched f;
  auto start = std::chrono::steady_clock::now();
  std::vector<char> expected;
  HttpRequest r{.url = "http://127.0.0.1:" + std::to_string(port) + path};
  r.sink = [&](uint64_t, std::string_view data) {
    if (f.bytes == 0) {
      f.first_byte = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      if (first_byte_seen != nullptr) first_byte_seen->store(true);
    }
    expected.resize(data.size());
    FillPattern(f.bytes, expected.data(), data.size());
    if (std::memcmp(expected.data(), data.data(), data.size()) != 0) f.pattern_ok = false;
    f.bytes += data.size();
    return Status::Ok();
  };
  Result<HttpResponse> resp = client.Send(r);
  if (resp.ok()) {
    f.status = resp->status;
    f.content_length = resp->Header("Content-Length");
  }
  return f;
}

TEST(MirrorStreamItest, HugeAndEndlessBodiesStreamToTheClientInBoundedMemory) {
  if (cutover::testing::kAddressSanitizer) {
    GTEST_SKIP() << "a memory bound and 400 MB through the proxy: the normal build checks them";
  }
  std::string bin = cutover::testing::BinaryDir() + "/apps/cutover/cutover";
  if (::access(bin.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL("cutover not built: " + bin);
  std::atomic<bool> resume{false};
  const std::map<std::string, Body> primary_paths = {
      {"/huge", Body::kHuge}, {"/nolength", Body::kNoLength}, {"/endless", Body::kSmall}};
  StreamServer primary(primary_paths, &resume), secondary(primary_paths, &resume);
  StreamServer candidate(
      {{"/huge", Body::kHuge}, {"/nolength", Body::kNoLength}, {"/endless", Body::kEndless}},
      &resume);
  ASSERT_TRUE(primary.Start().ok());
  ASSERT_TRUE(secondary.Start().ok());
  ASSERT_TRUE(candidate.Start().ok());

  cutover::testing::TempDir dir;
  std::string log_path = dir.Join("mirror.log"), out = dir.Join("report.json");
  cutover::testing::ChildProcess child;
  ASSERT_TRUE(child
                  .Spawn({bin, "canary", "mirror", "--listen", "127.0.0.1:0", "--primary",
                          primary.Url(), "--secondary", secondary.Url(), "--candidate",
                          candidate.Url(), "--requests", "3", "--out", out},
                         log_path)
                  .ok());
  const int port = testing::WaitForMirrorPort(log_path, child);
  ASSERT_NE(port, 0) << ReadFile(log_path).value_or("");
  std::atomic<long> peak_kib{0};
  std::atomic<bool> sampling{true};
  std::thread sampler([&] {
    while (sampling) {
      long kib = PeakRssKib(child.pid());
      if (kib > peak_kib) peak_kib = kib;
      std::this_thread::sleep_for(20ms);
    }
  });

  // The primary stops half-way until the client has its first byte: a store-and-forward proxy
  // would wait out its 10 s pause.
  Fetched huge = FetchThrough(port, "/huge", &resume);
  EXPECT_EQ(huge.status, 200);
  EXPECT_EQ(huge.bytes, kHuge);
  EXPECT_TRUE(huge.pattern_ok);
  EXPECT_EQ(huge.content_length.value_or(""), std::to_string(kHuge));
  EXPECT_GE(huge.first_byte.count(), 0);
  EXPECT_LT(huge.first_byte.count(), 5000) << "the first byte waited for the whole answer";

  Fetched no_length = FetchThrough(port, "/nolength", nullptr);
  EXPECT_EQ(no_length.status, 200);
  EXPECT_EQ(no_length.bytes, kNoLength);
  EXPECT_TRUE(no_length.pattern_ok);
  EXPECT_FALSE(no_length.content_length.has_value());  // re-sent chunked

  Fetched small = FetchThrough(port, "/endless", nullptr);
  EXPECT_EQ(small.status, 200);
  EXPECT_EQ(small.bytes, kSmall);
  EXPECT_TRUE(small.pattern_ok);

  for (int i = 0; i < 600 && child.Running(); ++i) std::this_thread::sleep_for(50ms);
  sampling = false;
  sampler.join();
  std::string log = ReadFile(log_path).value_or("");
  ASSERT_EQ(child.exit_description(), "exit 0") << log;
  // Under the default --max-body (4 MiB) a worker holds three copies of at most that size; the
  // mirror idles at about 15 MB.
  RecordProperty("mirror_peak_rss_kib", std::to_string(peak_kib.load()));
  EXPECT_GT(peak_kib.load(), 0);
  EXPECT_LT(peak_kib.load(), 100 * 1024) << "the mirror held a body";
  EXPECT_THAT(log, HasSubstr("requests 3, mirrored 2, compared 1, dropped 0"));
  EXPECT_THAT(log, HasSubstr("too large to compare 2\n"));
  // The primary's huge answer was not copied; the endless one was cut at --max-body.
  EXPECT_EQ(candidate.requests(), 3);  // the start-up check, /nolength, /endless
  Result<nlohmann::json> doc = LoadJsonFile(out);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ((*doc)["traffic"]["too_large"], 2);
  EXPECT_EQ((*doc)["options"]["max_body"], 4 << 20);
  EXPECT_EQ((*doc)["verdict"], "pass");
  CUTOVER_EXPECT_VALID(*doc, "mirror-report-1.json");
}

TEST(MirrorStreamItest, MaxBodyIsCheckedAsASize) {
  std::string bin = cutover::testing::BinaryDir() + "/apps/cutover/cutover";
  if (::access(bin.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL("cutover not built: " + bin);
  for (const auto& [value, message] : std::vector<std::pair<std::string, std::string>>{
           {"4X", "mirror: --max-body: bad size '4X'"}, {"0", "mirror: --max-body must be > 0"}}) {
    std::string text;
    int rc = cutover::testing::RunShell(bin +
                                            " canary mirror --primary http://127.0.0.1:9 "
                                            "--secondary http://127.0.0.1:9 --candidate "
                                            "http://127.0.0.1:9 --max-body " +
                                            value,
                                        &text);
    EXPECT_EQ(rc, 2) << text;
    EXPECT_THAT(text, HasSubstr(message));
  }
}

}  // namespace
}  // namespace cutover::canary
