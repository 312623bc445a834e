#include "tests/harness/fault_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/strings.h"

namespace cutover::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kBufferCap = 256 * 1024;      // per direction, before reading stops
constexpr size_t kMaxHeaderBytes = 64 * 1024;  // longer: not HTTP, framing ends
constexpr milliseconds kDrainTime(2000);       // reading a closed-for-write client before close

constexpr const char* kModeNames[kFaultModeCount] = {
    "none", "drop", "reset", "stall", "http_503", "http_429", "http_500", "truncate", "slow"};

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void ResetFd(int& fd) {
  if (fd < 0) return;
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  CloseFd(fd);
}

bool IsTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c);
}

}  // namespace

std::string_view FaultModeName(FaultMode mode) {
  int i = static_cast<int>(mode);
  return (i >= 0 && i < kFaultModeCount) ? kModeNames[i] : "unknown";
}

Result<FaultMode> ParseFaultMode(std::string_view name) {
  for (int i = 0; i < kFaultModeCount; ++i) {
    if (name == kModeNames[i]) return static_cast<FaultMode>(i);
  }
  return Status::InvalidArgument("unknown fault mode '" + std::string(name) +
                                 "' (drop, reset, stall, http_503, http_429, http_500, "
                                 "truncate, slow)");
}

Result<std::vector<FaultRule>> ParseFaultRules(std::string_view spec) {
  std::vector<FaultRule> rules;
  double total = 0;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string_view item =
        spec.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) continue;
    size_t colon = item.find(':');
    FaultRule rule;
    CUTOVER_ASSIGN_OR_RETURN(rule.mode, ParseFaultMode(item.substr(0, colon)));
    rule.rate = 1;
    if (colon != std::string_view::npos) {
      std::string text(item.substr(colon + 1));
      char* end = nullptr;
      errno = 0;
      rule.rate = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || errno != 0 || !(rule.rate >= 0 && rule.rate <= 1)) {
        return Status::InvalidArgument("fault rate '" + text + "' is not a number in 0..1");
      }
    }
    total += rule.rate;
    rules.push_back(rule);
  }
  if (total > 1 + 1e-9) {
    return Status::InvalidArgument("fault rates sum to more than 1 in '" + std::string(spec) + "'");
  }
  return rules;
}

std::string FaultProxyCounters::ToString() const {
  std::ostringstream s;
  s << "connections=" << connections << " requests=" << requests << " decisions=" << decisions
    << " bytes_to_upstream=" << bytes_to_upstream << " bytes_to_client=" << bytes_to_client
    << " upstream_connect_errors=" << upstream_connect_errors << " spared=" << spared;
  for (int i = 0; i < kFaultModeCount; ++i) s << " " << kModeNames[i] << "=" << faults[i];
  return s.str();
}

// One proxied connection. Client bytes land in `inbox`; the framing step moves them to `c2u`
// (to upstream); upstream bytes land in `u2c` (to client).
struct FaultProxy::Conn {
  int client = -1;
  int upstream = -1;
  bool connecting = false;
  bool upstream_wr_shut = false;
  bool client_eof = false;
  bool upstream_eof = false;
  std::string inbox, c2u, u2c;

  // Fault state.
  FaultMode armed = FaultMode::kNone;  // kConnection: drop/reset/http_* waiting for the request
  bool answer_then_close = false;      // u2c holds a proxy answer; close after flushing it
  bool stalling = false;
  bool stall_forever = false;
  Clock::time_point stall_until;
  bool truncating = false;
  uint64_t truncate_left = 0;
  bool slow = false;
  double slow_rate = 0;
  Clock::time_point slow_start;
  uint64_t slow_sent = 0;
  bool draining = false;  // client write side shut; reading and discarding until EOF
  Clock::time_point drain_until;
  int retry_after_s = 1;
  bool done = false;

  // Request framing (kHttpRequest).
  bool framing = false;
  enum class Frame { kHeaders, kBody, kChunkSize, kChunkData, kChunkCrlf, kTrailers };
  Frame frame = Frame::kHeaders;
  uint64_t body_left = 0;
  bool header_decided = false;
};

FaultProxy::FaultProxy(FaultProxyOptions options) : options_(std::move(options)) {}

FaultProxy::~FaultProxy() { Stop(); }

std::string FaultProxy::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

Status FaultProxy::Start() {
  if (thread_.joinable()) return Status::FailedPrecondition("fault proxy already running");
  in_addr addr{};
  if (::inet_pton(AF_INET, options_.upstream_host.c_str(), &addr) != 1) {
    return Status::InvalidArgument("upstream host '" + options_.upstream_host +
                                   "' is not an IPv4 address");
  }
  if (options_.upstream_port <= 0 || options_.upstream_port > 65535) {
    return Status::InvalidArgument("upstream port " + std::to_string(options_.upstream_port) +
                                   " is out of range");
  }
  upstream_addr_ = addr.s_addr;
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>(options_.listen_port));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    int e = errno;
    CloseFd(listen_fd_);
    return Status::IoError("bind 127.0.0.1:" + std::to_string(options_.listen_port) + ": " +
                           std::strerror(e));
  }
  socklen_t len = sizeof(sa);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  port_ = ntohs(sa.sin_port);
  SetNonBlocking(listen_fd_);
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    CloseFd(listen_fd_);
    return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  }
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void FaultProxy::Stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  char b = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_[1], &b, 1);
  thread_.join();
  CloseFd(listen_fd_);
  CloseFd(wake_[0]);
  CloseFd(wake_[1]);
}

Status FaultProxy::SetFaults(std::vector<FaultRule> rules, uint64_t seed) {
  double total = 0;
  for (const FaultRule& r : rules) {
    if (!(r.rate >= 0 && r.rate <= 1)) return Status::InvalidArgument("fault rate not in 0..1");
    total += r.rate;
  }
  if (total > 1 + 1e-9) return Status::InvalidArgument("fault rates sum to more than 1");
  std::lock_guard<std::mutex> lock(mu_);
  options_.rules = std::move(rules);
  options_.seed = seed;
  next_index_ = 0;
  decisions_.clear();
  faults_by_request_.clear();
  return Status::Ok();
}

Status FaultProxy::SetOptions(const FaultProxyOptions& options) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    options_.stall_ms = options.stall_ms;
    options_.retry_after_s = options.retry_after_s;
    options_.truncate_bytes = options.truncate_bytes;
    options_.slow_bytes_per_s = options.slow_bytes_per_s;
    options_.max_faults_per_request = options.max_faults_per_request;
  }
  return SetFaults(options.rules, options.seed);
}

FaultProxyCounters FaultProxy::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

std::vector<FaultMode> FaultProxy::decisions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return decisions_;
}

FaultMode FaultProxy::Decide(const std::vector<FaultRule>& rules, uint64_t seed, uint64_t i) {
  uint64_t bits = SplitMix64(SplitMix64(seed) ^ i);
  double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
  double edge = 0;
  for (const FaultRule& r : rules) {
    edge += r.rate;
    if (u < edge) return r.mode;
  }
  return FaultMode::kNone;
}

FaultMode FaultProxy::NextDecision(std::string_view request) {
  std::lock_guard<std::mutex> lock(mu_);
  FaultMode m = Decide(options_.rules, options_.seed, next_index_++);
  if (m != FaultMode::kNone && !request.empty() && options_.max_faults_per_request > 0) {
    auto it = faults_by_request_.find(request);
    if (it == faults_by_request_.end()) it = faults_by_request_.emplace(request, 0).first;
    if (it->second >= options_.max_faults_per_request) {
      m = FaultMode::kNone;
      counters_.spared++;
    } else {
      it->second++;
    }
  }
  decisions_.push_back(m);
  counters_.decisions++;
  counters_.faults[static_cast<int>(m)]++;
  return m;
}

// Ends the client side cleanly: no more writes, read and discard what the client still sends
// (closing with unread data would turn the FIN into an RST), then close.
static void StartDrain(int client, bool* draining, Clock::time_point* until) {
  if (*draining) return;
  ::shutdown(client, SHUT_WR);
  *draining = true;
  *until = Clock::now() + kDrainTime;
}

void FaultProxy::ApplyFault(Conn& c, FaultMode mode) {
  FaultProxyOptions o;
  {
    std::lock_guard<std::mutex> lock(mu_);
    o = options_;
  }
  c.slow = false;
  c.truncating = false;
  c.retry_after_s = o.retry_after_s;
  switch (mode) {
    case FaultMode::kNone:
      break;
    case FaultMode::kDrop:
      CloseFd(c.upstream);
      c.inbox.clear();
      c.c2u.clear();
      c.u2c.clear();
      c.framing = false;
      StartDrain(c.client, &c.draining, &c.drain_until);
      break;
    case FaultMode::kReset:
      ResetFd(c.client);
      CloseFd(c.upstream);
      c.done = true;
      break;
    case FaultMode::kStall:
      c.stalling = true;
      c.stall_forever = o.stall_ms <= 0;
      c.stall_until = Clock::now() + milliseconds(o.stall_ms);
      break;
    case FaultMode::kHttp503:
    case FaultMode::kHttp429:
    case FaultMode::kHttp500:
      FinishWithAnswer(c, mode);
      break;
    case FaultMode::kTruncate:
      c.truncating = true;
      c.truncate_left = o.truncate_bytes;
      break;
    case FaultMode::kSlow:
      c.slow = true;
      c.slow_rate = std::max(1.0, o.slow_bytes_per_s);
      c.slow_start = Clock::now();
      c.slow_sent = 0;
      break;
  }
}

void FaultProxy::FinishWithAnswer(Conn& c, FaultMode mode) {
  std::string status;
  bool retry = true;
  if (mode == FaultMode::kHttp503) {
    status = "503 Service Unavailable";
  } else if (mode == FaultMode::kHttp429) {
    status = "429 Too Many Requests";
  } else {
    status = "500 Internal Server Error";
    retry = false;
  }
  std::string body = "fault proxy: " + status + "\n";
  std::string answer = "HTTP/1.1 " + status + "\r\n";
  if (retry) answer += "Retry-After: " + std::to_string(c.retry_after_s) + "\r\n";
  answer += "Content-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\nConnection: close\r\n\r\n" + body;
  CloseFd(c.upstream);
  c.inbox.clear();
  c.c2u.clear();
  c.u2c = answer;
  c.framing = false;
  c.answer_then_close = true;
}

// Moves client bytes from inbox to c2u following HTTP/1.1 request framing, taking one decision
// per request header block.
void FaultProxy::ParseRequests(Conn& c) {
  using Frame = Conn::Frame;
  while (c.framing && !c.done && !c.draining && !c.answer_then_close && !c.stalling &&
         !c.inbox.empty()) {
    switch (c.frame) {
      case Frame::kHeaders: {
        size_t end = c.inbox.find("\r\n\r\n");
        if (end == std::string::npos) {
          if (c.inbox.size() > kMaxHeaderBytes) c.framing = false;
          return;
        }
        std::string_view head(c.inbox.data(), end + 2);
        // Request line: METHOD SP target SP HTTP/1.x
        size_t eol = head.find("\r\n");
        std::string_view line = head.substr(0, eol);
        size_t sp1 = line.find(' ');
        size_t sp2 = line.rfind(' ');
        bool ok = sp1 != std::string_view::npos && sp1 > 0 && sp2 > sp1 &&
                  line.substr(sp2 + 1).substr(0, 7) == "HTTP/1.";
        for (size_t i = 0; ok && i < sp1; ++i) ok = IsTokenChar(line[i]);
        if (!ok) {
          c.framing = false;
          return;
        }
        uint64_t length = 0;
        bool chunked = false;
        size_t pos = eol + 2;
        while (pos < head.size()) {
          size_t next = head.find("\r\n", pos);
          std::string_view h = head.substr(pos, next - pos);
          pos = next + 2;
          size_t colon = h.find(':');
          if (colon == std::string_view::npos) continue;
          std::string name = AsciiLower(Trim(h.substr(0, colon)));
          std::string value = AsciiLower(Trim(h.substr(colon + 1)));
          if (name == "content-length") length = std::strtoull(value.c_str(), nullptr, 10);
          if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) {
            chunked = true;
          }
        }
        if (!c.header_decided) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            counters_.requests++;
          }
          c.header_decided = true;
          ApplyFault(c, NextDecision(line));
          if (c.done || c.draining || c.answer_then_close || c.stalling) break;
        }
        c.c2u.append(c.inbox, 0, end + 4);
        c.inbox.erase(0, end + 4);
        c.header_decided = false;
        if (chunked) {
          c.frame = Frame::kChunkSize;
        } else if (length > 0) {
          c.frame = Frame::kBody;
          c.body_left = length;
        }
        break;
      }
      case Frame::kBody:
      case Frame::kChunkData: {
        size_t k = static_cast<size_t>(std::min<uint64_t>(c.body_left, c.inbox.size()));
        c.c2u.append(c.inbox, 0, k);
        c.inbox.erase(0, k);
        c.body_left -= k;
        if (c.body_left == 0)
          c.frame = c.frame == Frame::kBody ? Frame::kHeaders : Frame::kChunkCrlf;
        break;
      }
      case Frame::kChunkCrlf: {
        if (c.inbox.size() < 2) return;
        c.c2u.append(c.inbox, 0, 2);
        c.inbox.erase(0, 2);
        c.frame = Frame::kChunkSize;
        break;
      }
      case Frame::kChunkSize:
      case Frame::kTrailers: {
        size_t eol = c.inbox.find("\r\n");
        if (eol == std::string::npos) {
          if (c.inbox.size() > kMaxHeaderBytes) c.framing = false;
          return;
        }
        std::string line = c.inbox.substr(0, eol);
        c.c2u.append(c.inbox, 0, eol + 2);
        c.inbox.erase(0, eol + 2);
        if (c.frame == Frame::kTrailers) {
          if (line.empty()) c.frame = Frame::kHeaders;
        } else {
          char* end = nullptr;
          c.body_left = std::strtoull(line.c_str(), &end, 16);
          if (end == line.c_str()) {
            c.framing = false;
          } else {
            c.frame = c.body_left == 0 ? Frame::kTrailers : Frame::kChunkData;
          }
        }
        break;
      }
    }
  }
}

bool FaultProxy::Service(Conn& c, short cev, short uev) {
  auto now = Clock::now();
  char buf[65536];

  // Reads from the client: always (draining discards), up to the buffer cap.
  if (c.client >= 0 && !c.client_eof && (cev & (POLLIN | POLLHUP | POLLERR)) &&
      c.inbox.size() < kBufferCap) {
    ssize_t n = ::recv(c.client, buf, sizeof(buf), 0);
    if (n > 0) {
      if (!c.draining && !c.answer_then_close) c.inbox.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      c.client_eof = true;
    } else if (errno != EAGAIN && errno != EINTR) {
      return false;
    }
  }
  if (c.draining && (c.client_eof || now >= c.drain_until)) return false;
  if (c.stalling && c.stall_forever && c.client_eof) return false;
  if (c.stalling && !c.stall_forever && now >= c.stall_until) c.stalling = false;

  // A connection-level fault armed at accept fires once the client has spoken.
  if (c.armed != FaultMode::kNone && !c.stalling) {
    bool fire = c.client_eof || !c.inbox.empty();
    if (c.armed != FaultMode::kDrop && c.armed != FaultMode::kReset) {
      fire = c.client_eof || c.inbox.find("\r\n\r\n") != std::string::npos ||
             c.inbox.size() > kMaxHeaderBytes;
    }
    if (fire) {
      FaultMode m = c.armed;
      c.armed = FaultMode::kNone;
      ApplyFault(c, m);
      if (c.done) return false;
    }
  }

  if (!c.stalling && !c.draining && !c.answer_then_close && c.armed == FaultMode::kNone) {
    if (c.framing) ParseRequests(c);
    if (c.done) return false;
    // A client that stopped mid-header: forward what it sent as it is.
    if (c.framing && c.client_eof && !c.stalling && !c.draining && !c.answer_then_close) {
      c.framing = false;
    }
    if (!c.framing && !c.stalling && !c.draining && !c.answer_then_close) {
      c.c2u += c.inbox;
      c.inbox.clear();
    }
  }

  // Upstream connect, lazily, when there is something to send.
  if (c.upstream < 0 && !c.c2u.empty() && !c.draining && !c.answer_then_close) {
    c.upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = upstream_addr_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sa.sin_port = htons(static_cast<uint16_t>(options_.upstream_port));
    }
    int one = 1;
    ::setsockopt(c.upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int r = ::connect(c.upstream, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    if (r != 0 && errno != EINPROGRESS) {
      std::lock_guard<std::mutex> lock(mu_);
      counters_.upstream_connect_errors++;
      return false;
    }
    c.connecting = r != 0;
    return true;  // next round
  }
  if (c.connecting) {
    if (!(uev & (POLLOUT | POLLERR | POLLHUP))) return true;
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(c.upstream, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      std::lock_guard<std::mutex> lock(mu_);
      counters_.upstream_connect_errors++;
      return false;
    }
    c.connecting = false;
  }

  // Client -> upstream.
  if (c.upstream >= 0 && !c.connecting && !c.c2u.empty()) {
    ssize_t n = ::send(c.upstream, c.c2u.data(), c.c2u.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.c2u.erase(0, static_cast<size_t>(n));
      std::lock_guard<std::mutex> lock(mu_);
      counters_.bytes_to_upstream += static_cast<uint64_t>(n);
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return false;
    }
  }
  if (c.client_eof && c.inbox.empty() && c.c2u.empty() && !c.draining) {
    if (c.upstream < 0 && !c.answer_then_close) return false;
    if (c.upstream >= 0 && !c.connecting && !c.upstream_wr_shut) {
      ::shutdown(c.upstream, SHUT_WR);
      c.upstream_wr_shut = true;
    }
  }

  // Upstream -> client buffer.
  if (c.upstream >= 0 && !c.connecting && !c.upstream_eof && (uev & (POLLIN | POLLHUP | POLLERR)) &&
      c.u2c.size() < kBufferCap) {
    ssize_t n = ::recv(c.upstream, buf, sizeof(buf), 0);
    if (n > 0) {
      c.u2c.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      c.upstream_eof = true;
    } else if (errno != EAGAIN && errno != EINTR) {
      c.upstream_eof = true;
    }
  }

  // Upstream buffer -> client, subject to stall, truncate and slow.
  if (!c.u2c.empty() && !c.stalling && !c.draining) {
    size_t want = c.u2c.size();
    if (!c.answer_then_close) {
      if (c.truncating) want = static_cast<size_t>(std::min<uint64_t>(want, c.truncate_left));
      if (c.slow) {
        double elapsed = std::chrono::duration<double>(now - c.slow_start).count();
        double allowed = std::floor(elapsed * c.slow_rate) - static_cast<double>(c.slow_sent);
        want = allowed <= 0 ? 0 : std::min(want, static_cast<size_t>(allowed));
      }
    }
    if (want > 0) {
      ssize_t n = ::send(c.client, c.u2c.data(), want, MSG_NOSIGNAL);
      if (n > 0) {
        c.u2c.erase(0, static_cast<size_t>(n));
        if (!c.answer_then_close) {
          if (c.truncating) c.truncate_left -= static_cast<uint64_t>(n);
          if (c.slow) c.slow_sent += static_cast<uint64_t>(n);
          std::lock_guard<std::mutex> lock(mu_);
          counters_.bytes_to_client += static_cast<uint64_t>(n);
        }
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return false;
      }
    }
    if (c.truncating && c.truncate_left == 0 && !c.u2c.empty()) {
      // The cut: nothing more of this response reaches the client.
      CloseFd(c.upstream);
      c.u2c.clear();
      StartDrain(c.client, &c.draining, &c.drain_until);
      return true;
    }
  }
  if (c.answer_then_close && c.u2c.empty()) {
    StartDrain(c.client, &c.draining, &c.drain_until);
    return true;
  }
  if (c.upstream_eof && c.u2c.empty() && !c.draining) {
    CloseFd(c.upstream);
    StartDrain(c.client, &c.draining, &c.drain_until);
  }
  return true;
}

void FaultProxy::Loop() {
  std::vector<pollfd> fds;
  while (!stop_) {
    fds.clear();
    fds.push_back({wake_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    int timeout_ms = 200;
    auto now = Clock::now();
    for (auto& cp : conns_) {
      Conn& c = *cp;
      short cev = 0;
      if (c.client >= 0 && !c.client_eof && c.inbox.size() < kBufferCap) cev |= POLLIN;
      if (!c.u2c.empty() && !c.stalling && !c.draining) cev |= POLLOUT;
      short uev = 0;
      if (c.upstream >= 0) {
        if (c.connecting || !c.c2u.empty()) uev |= POLLOUT;
        if (!c.connecting && !c.upstream_eof && c.u2c.size() < kBufferCap) uev |= POLLIN;
      }
      if (c.slow && !c.u2c.empty()) {
        cev &= static_cast<short>(~POLLOUT);
        timeout_ms = std::min(timeout_ms, 5);
      }
      if (c.upstream < 0 && !c.c2u.empty()) timeout_ms = 0;
      auto until_ms = [&](Clock::time_point t) {
        return static_cast<int>(
            std::max<int64_t>(0, std::chrono::duration_cast<milliseconds>(t - now).count() + 1));
      };
      if (c.stalling && !c.stall_forever)
        timeout_ms = std::min(timeout_ms, until_ms(c.stall_until));
      if (c.draining) timeout_ms = std::min(timeout_ms, until_ms(c.drain_until));
      fds.push_back({c.client, cev, 0});
      fds.push_back({c.upstream, uev, 0});
    }
    int r = ::poll(fds.data(), fds.size(), timeout_ms);
    if (r < 0 && errno != EINTR) break;
    if (stop_) break;
    if (fds[0].revents & POLLIN) {
      char b[64];
      while (::read(wake_[0], b, sizeof(b)) > 0) {
      }
    }
    // Service existing connections (before accepting, so indices line up with fds).
    for (size_t i = 0; i < conns_.size(); ++i) {
      Conn& c = *conns_[i];
      short cev = fds[2 + 2 * i].revents;
      short uev = fds[3 + 2 * i].revents;
      if (!Service(c, cev, uev) || c.done) {
        CloseFd(c.client);
        CloseFd(c.upstream);
        c.done = true;
      }
    }
    conns_.erase(std::remove_if(conns_.begin(), conns_.end(),
                                [](const std::unique_ptr<Conn>& c) { return c->done; }),
                 conns_.end());
    if (fds[1].revents & POLLIN) {
      while (true) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        auto c = std::make_unique<Conn>();
        c->client = fd;
        bool per_request;
        {
          std::lock_guard<std::mutex> lock(mu_);
          counters_.connections++;
          per_request = options_.granularity == FaultGranularity::kHttpRequest;
        }
        if (per_request) {
          c->framing = true;
        } else {
          FaultMode m = NextDecision();
          if (m == FaultMode::kDrop || m == FaultMode::kReset || m == FaultMode::kHttp503 ||
              m == FaultMode::kHttp429 || m == FaultMode::kHttp500) {
            c->armed = m;
          } else {
            ApplyFault(*c, m);
          }
        }
        conns_.push_back(std::move(c));
      }
    }
  }
  for (auto& c : conns_) {
    CloseFd(c->client);
    CloseFd(c->upstream);
  }
  conns_.clear();
}

}  // namespace cutover::testing
