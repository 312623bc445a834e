#include "tests/harness/scripted_http_server.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/strings.h"

namespace cutover::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxHead = 64 * 1024;

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

const char* Reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 207:
      return "Multi-Status";
    case 301:
      return "Moved Permanently";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 412:
      return "Precondition Failed";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Status";
  }
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

std::optional<std::string> RecordedRequest::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (IEquals(n, name)) return v;
  }
  return std::nullopt;
}

struct ScriptedHttpServer::Conn {
  enum class State { kReading, kWaiting, kWriting };
  enum class After { kKeep, kClose };

  int fd = -1;
  int id = 0;
  bool dead = false;
  bool reset = false;  // close with SO_LINGER 0 (RST)
  State state = State::kReading;
  std::string in;
  std::string out;
  size_t out_off = 0;
  After after = After::kKeep;

  // The request being read.
  bool head_parsed = false;
  size_t head_len = 0;
  RecordedRequest req;
  bool chunked = false;
  size_t content_length = 0;
  bool expect_continue = false;
  bool sent_continue = false;
  bool client_close = false;

  // The answer waiting for its time.
  ScriptedResponse pending;
  std::string pending_method;
  Clock::time_point act_at;
};

namespace {

// Decodes a chunked body starting at `pos`; returns false while incomplete, else sets *body and
// *end (one past the final CRLF). Sets *bad on a malformed body.
bool DecodeChunked(const std::string& in, size_t pos, std::string* body, size_t* end, bool* bad) {
  body->clear();
  while (true) {
    size_t eol = in.find("\r\n", pos);
    if (eol == std::string::npos) return false;
    std::string size_line = in.substr(pos, eol - pos);
    size_t semi = size_line.find(';');
    if (semi != std::string::npos) size_line.resize(semi);
    char* stop = nullptr;
    unsigned long size = std::strtoul(size_line.c_str(), &stop, 16);
    if (size_line.empty() || stop == size_line.c_str()) {
      *bad = true;
      return false;
    }
    pos = eol + 2;
    if (size == 0) {
      // Trailers, then an empty line.
      while (true) {
        size_t t = in.find("\r\n", pos);
        if (t == std::string::npos) return false;
        bool empty = t == pos;
        pos = t + 2;
        if (empty) {
          *end = pos;
          return true;
        }
      }
    }
    if (in.size() < pos + size + 2) return false;
    body->append(in, pos, size);
    pos += size + 2;
  }
}

}  // namespace

ScriptedHttpServer::~ScriptedHttpServer() { Stop(); }

Status ScriptedHttpServer::Start(int port) {
  if (thread_.joinable()) return Status::FailedPrecondition("scripted server already started");
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 512) != 0) {
    Status s = Status::IoError(std::string("bind/listen 127.0.0.1: ") + std::strerror(errno));
    ::close(listen_fd_);
    listen_fd_ = -1;
    return s;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  SetNonBlocking(listen_fd_);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void ScriptedHttpServer::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

std::string ScriptedHttpServer::Url(std::string_view path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
}

void ScriptedHttpServer::Enqueue(ScriptedResponse response) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(response));
}

void ScriptedHttpServer::SetHandler(Handler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  handler_ = std::move(handler);
}

std::vector<RecordedRequest> ScriptedHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t ScriptedHttpServer::request_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

int ScriptedHttpServer::connections_accepted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return accepted_;
}

int ScriptedHttpServer::open_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

int ScriptedHttpServer::max_open_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_open_;
}

void ScriptedHttpServer::ClearRecords() {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.clear();
  accepted_ = 0;
  max_open_ = open_;
}

ScriptedResponse ScriptedHttpServer::Choose(const RecordedRequest& request) {
  Handler handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    if (!queue_.empty()) {
      ScriptedResponse r = std::move(queue_.front());
      queue_.pop_front();
      return r;
    }
    handler = handler_;
  }
  if (handler) return handler(request);
  ScriptedResponse r;
  r.status = 404;
  r.body = "no scripted response\n";
  return r;
}

void ScriptedHttpServer::Loop() {
  std::vector<std::unique_ptr<Conn>> conns;

  auto flush = [](Conn& c) {
    while (c.out_off < c.out.size()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
        if (errno == EINTR) continue;
        c.dead = true;
        return false;
      }
      c.out_off += static_cast<size_t>(n);
    }
    c.out.clear();
    c.out_off = 0;
    return true;
  };

  std::function<void(Conn&)> try_parse;

  auto act = [&](Conn& c) {
    const ScriptedResponse& r = c.pending;
    using Action = ScriptedResponse::Action;
    if (r.action == Action::kCloseWithoutAnswer) {
      c.dead = true;
      return;
    }
    if (r.action == Action::kReset) {
      c.reset = true;
      c.dead = true;
      return;
    }
    bool partial = r.action == Action::kPartialBodyThenClose;
    bool partial_head = r.action == Action::kPartialHeadThenClose;
    bool close = partial || partial_head || r.close_after || c.client_close;
    std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + Reason(r.status) + "\r\n";
    bool has_length = false;
    for (const auto& [n, v] : r.headers) {
      if (IEquals(n, "Content-Length")) has_length = true;
      head += n + ": " + v + "\r\n";
    }
    bool no_body_status = (r.status >= 100 && r.status < 200) || r.status == 204 || r.status == 304;
    if (!has_length && !no_body_status) {
      head += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
    }
    if (close) head += "Connection: close\r\n";
    head += "\r\n";
    if (partial_head) head.resize(std::min(r.partial_bytes, head.size()));
    c.out += head;
    if (!partial_head && c.pending_method != "HEAD" && !no_body_status) {
      c.out += partial ? r.body.substr(0, std::min(r.partial_bytes, r.body.size())) : r.body;
    }
    c.after = close ? Conn::After::kClose : Conn::After::kKeep;
    c.state = Conn::State::kWriting;
    if (flush(c)) {
      if (c.after == Conn::After::kClose) {
        c.dead = true;
      } else {
        c.state = Conn::State::kReading;
        try_parse(c);
      }
    }
  };

  auto bad_request = [&](Conn& c) {
    c.in.clear();
    c.out += "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    c.after = Conn::After::kClose;
    c.state = Conn::State::kWriting;
    if (flush(c)) c.dead = true;
  };

  try_parse = [&](Conn& c) {
    if (c.dead || c.state != Conn::State::kReading) return;
    if (!c.head_parsed) {
      if (c.in.empty()) return;
      if (!std::isupper(static_cast<unsigned char>(c.in[0]))) return bad_request(c);
      size_t end = c.in.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (c.in.size() > kMaxHead) bad_request(c);
        return;
      }
      std::string_view head(c.in.data(), end);
      size_t eol = head.find("\r\n");
      std::string_view line = head.substr(0, eol);
      size_t sp1 = line.find(' ');
      size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
      if (sp2 == std::string_view::npos || line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0) {
        return bad_request(c);
      }
      c.req = RecordedRequest();
      c.req.method = std::string(line.substr(0, sp1));
      c.req.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
      c.req.connection_id = c.id;
      c.chunked = false;
      c.content_length = 0;
      c.expect_continue = false;
      c.client_close = line.substr(sp2 + 1) == "HTTP/1.0";
      size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
      while (pos < head.size()) {
        size_t e = head.find("\r\n", pos);
        if (e == std::string_view::npos) e = head.size();
        std::string_view h = head.substr(pos, e - pos);
        pos = e + 2;
        size_t colon = h.find(':');
        if (colon == std::string_view::npos) return bad_request(c);
        std::string name(Trim(h.substr(0, colon)));
        std::string value(Trim(h.substr(colon + 1)));
        if (IEquals(name, "Content-Length"))
          c.content_length = std::strtoull(value.c_str(), nullptr, 10);
        if (IEquals(name, "Transfer-Encoding") && value.find("chunked") != std::string::npos) {
          c.chunked = true;
        }
        if (IEquals(name, "Expect") && IEquals(value, "100-continue")) c.expect_continue = true;
        if (IEquals(name, "Connection") && IEquals(value, "close")) c.client_close = true;
        c.req.headers.emplace_back(std::move(name), std::move(value));
      }
      c.head_len = end + 4;
      c.head_parsed = true;
      c.sent_continue = false;
    }
    bool has_body = c.chunked || c.content_length > 0;
    if (has_body && c.expect_continue && !c.sent_continue) {
      c.sent_continue = true;
      c.out += "HTTP/1.1 100 Continue\r\n\r\n";
      flush(c);
      if (c.dead) return;
    }
    size_t consumed = 0;
    if (c.chunked) {
      // A whole chunked body ends with CRLF CRLF; decoding only then keeps big uploads linear.
      if (c.in.size() < c.head_len + 5 || c.in.compare(c.in.size() - 4, 4, "\r\n\r\n") != 0) {
        return;
      }
      bool bad = false;
      if (!DecodeChunked(c.in, c.head_len, &c.req.body, &consumed, &bad)) {
        if (bad) bad_request(c);
        return;
      }
    } else {
      if (c.in.size() < c.head_len + c.content_length) return;
      c.req.body = c.in.substr(c.head_len, c.content_length);
      consumed = c.head_len + c.content_length;
    }
    c.in.erase(0, consumed);
    c.head_parsed = false;
    c.pending_method = c.req.method;
    c.pending = Choose(c.req);
    c.state = Conn::State::kWaiting;
    c.act_at = Clock::now() + c.pending.delay;
    if (c.pending.delay.count() <= 0) act(c);
  };

  std::vector<pollfd> fds;
  while (true) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    int timeout = -1;
    Clock::time_point now = Clock::now();
    for (auto& c : conns) {
      short events = POLLIN;
      if (!c->out.empty()) events |= POLLOUT;
      fds.push_back({c->fd, events, 0});
      if (c->state == Conn::State::kWaiting) {
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(c->act_at - now).count();
        int t = static_cast<int>(std::max<int64_t>(0, ms));
        timeout = timeout < 0 ? t : std::min(timeout, t);
      }
    }
    int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;

    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = *conns[i];
      short re = fds[i + 2].revents;
      if (re & (POLLIN | POLLHUP | POLLERR)) {
        char buf[65536];
        while (true) {
          ssize_t k = ::recv(c.fd, buf, sizeof(buf), 0);
          if (k > 0) {
            if (c.state != Conn::State::kWriting || c.after != Conn::After::kClose) {
              c.in.append(buf, static_cast<size_t>(k));
            }
            continue;
          }
          if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            c.dead = true;
          }
          if (k < 0 && errno == EINTR) continue;
          break;
        }
        if (!c.dead) try_parse(c);
      }
      if (!c.dead && (re & POLLOUT) && !c.out.empty()) {
        if (flush(c) && c.state == Conn::State::kWriting) {
          if (c.after == Conn::After::kClose) {
            c.dead = true;
          } else {
            c.state = Conn::State::kReading;
            try_parse(c);
          }
        }
      }
    }

    auto reap = [&] {
      size_t before = conns.size();
      for (auto& c : conns) {
        if (!c->dead) continue;
        if (c->reset) {
          linger lg{1, 0};
          ::setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        }
        ::close(c->fd);
      }
      conns.erase(std::remove_if(conns.begin(), conns.end(), [](auto& c) { return c->dead; }),
                  conns.end());
      if (conns.size() != before) {
        std::lock_guard<std::mutex> lock(mu_);
        open_ -= static_cast<int>(before - conns.size());
      }
    };
    reap();

    // Accept after closing, so a client replacing a connection is not counted twice at once.
    while (true) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      {
        std::lock_guard<std::mutex> lock(mu_);
        c->id = ++accepted_;
        ++open_;
        max_open_ = std::max(max_open_, open_);
      }
      conns.push_back(std::move(c));
    }

    now = Clock::now();
    for (auto& c : conns) {
      if (!c->dead && c->state == Conn::State::kWaiting && c->act_at <= now) act(*c);
    }
    reap();
  }
  for (auto& c : conns) ::close(c->fd);
  std::lock_guard<std::mutex> lock(mu_);
  open_ = 0;
}

}  // namespace cutover::testing
