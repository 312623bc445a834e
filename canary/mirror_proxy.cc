#include "canary/mirror_proxy.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "core/http_client.h"
#include "core/log.h"
#include "core/strings.h"

namespace cutover::canary {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// Boost 1.74's Beast has its own string_view.
std::string_view Sv(beast::string_view s) { return {s.data(), s.size()}; }

// Headers that belong to one connection (RFC 9110 7.6.1) or that libcurl and Beast set themselves
// for the hop they make; Accept-Encoding is left out so upstreams answer comparable bodies.
bool IsHopHeader(std::string_view name) {
  for (std::string_view h : {"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
                             "Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
                             "Host", "Content-Length", "Expect", "Accept-Encoding"}) {
    if (EqualsIgnoreCase(name, h)) return true;
  }
  return false;
}

// Header names listed in a Connection header are hop-by-hop too.
bool ListedInConnection(std::string_view name, std::string_view connection) {
  size_t pos = 0;
  while (pos <= connection.size()) {
    size_t comma = connection.find(',', pos);
    if (comma == std::string_view::npos) comma = connection.size();
    std::string_view token = connection.substr(pos, comma - pos);
    while (!token.empty() && (token.front() == ' ' || token.front() == '\t'))
      token.remove_prefix(1);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    if (!token.empty() && EqualsIgnoreCase(token, name)) return true;
    pos = comma + 1;
  }
  return false;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

Status CheckUpstreamUrl(const std::string& url, const char* flag) {
  std::string_view rest = url;
  if (rest.rfind("http://", 0) == 0) {
    rest.remove_prefix(7);
  } else if (rest.rfind("https://", 0) == 0) {
    rest.remove_prefix(8);
  } else {
    return Status::InvalidArgument(std::string("mirror: ") + flag + " '" + RedactUrl(url) +
                                   "': expected an http:// or https:// URL");
  }
  if (rest.empty() || rest.front() == '/') {
    return Status::InvalidArgument(std::string("mirror: ") + flag + " '" + RedactUrl(url) +
                                   "': no host");
  }
  if (url.find_first_of("?#") != std::string::npos) {
    return Status::InvalidArgument(std::string("mirror: ") + flag + " '" + RedactUrl(url) +
                                   "': a base URL takes no query or fragment");
  }
  return Status::Ok();
}

struct ListenAddress {
  asio::ip::address host;
  int port = 0;
};

Result<ListenAddress> ParseListen(const std::string& text) {
  auto bad = [&]() {
    return Status::InvalidArgument("mirror: --listen '" + text +
                                   "': expected HOST:PORT (an IP address or localhost)");
  };
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return bad();
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") host = "127.0.0.1";
  ListenAddress a;
  boost::system::error_code ec;
  a.host = asio::ip::make_address(host, ec);
  if (ec) return bad();
  std::string port = text.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return bad();
  a.port = std::stoi(port);
  if (a.port > 65535) return bad();
  return a;
}

// A copy of one client request, and the answer the client got.
struct CopyJob {
  std::string method;
  std::string target;
  std::vector<HttpHeader> headers;
  std::string body;
  MirrorResponse primary;
};

// What a queued copy holds in memory, as far as it can grow: the bodies.
uint64_t JobBytes(const CopyJob& job) { return job.body.size() + job.primary.body.size(); }

// The nice value of the threads that send copies and compare answers.
constexpr int kWorkerNice = 10;

HttpClientOptions UpstreamOptions(std::chrono::milliseconds timeout) {
  HttpClientOptions o;
  o.max_attempts = 1;
  o.timeout = timeout;
  o.connect_timeout = std::min(timeout, std::chrono::milliseconds(5000));
  return o;
}

}  // namespace

Status ValidateMirrorProxyOptions(const MirrorProxyOptions& o) {
  CUTOVER_RETURN_IF_ERROR(ParseListen(o.listen).status());
  CUTOVER_RETURN_IF_ERROR(CheckUpstreamUrl(o.primary, "--primary"));
  CUTOVER_RETURN_IF_ERROR(CheckUpstreamUrl(o.secondary, "--secondary"));
  CUTOVER_RETURN_IF_ERROR(CheckUpstreamUrl(o.candidate, "--candidate"));
  for (const std::string& m : o.methods) {
    if (!IsToken(m)) {
      return Status::InvalidArgument("mirror: --methods '" + m + "': not an HTTP method");
    }
  }
  if (o.queue_capacity == 0) return Status::InvalidArgument("mirror: --queue must be >= 1");
  if (o.workers < 1) return Status::InvalidArgument("mirror: --workers must be >= 1");
  if (o.max_connections < 1) return Status::InvalidArgument("mirror: max_connections must be >= 1");
  return ValidateMirrorCompareOptions(o.compare);
}

std::string JoinUpstreamUrl(const std::string& base, const std::string& target) {
  std::string url = base;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url + target;
}

struct MirrorProxy::Impl {
  explicit Impl(MirrorProxyOptions options)
      : o(std::move(options)),
        primary_client(UpstreamOptions(o.upstream_timeout)),
        copy_client(UpstreamOptions(o.upstream_timeout)),
        aggregator(o.compare) {}

  MirrorProxyOptions o;
  HttpClient primary_client;
  HttpClient copy_client;

  asio::io_context ioc;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread accept_thread;
  std::atomic<bool> stopping{false};
  bool started = false;
  bool stopped = false;

  // Client connections: their sockets (to shut down at Stop) and how many threads serve them.
  std::mutex conn_mu;
  std::condition_variable conn_cv;
  std::set<int> conn_fds;
  int active = 0;

  // Copies waiting for a worker.
  std::mutex queue_mu;
  std::condition_variable queue_cv;    // a job arrived, or the workers must stop
  std::condition_variable drained_cv;  // the queue ran empty with no worker busy
  std::deque<CopyJob> queue;
  uint64_t queued_bytes = 0;  // JobBytes of what is in the queue
  int busy = 0;
  bool workers_stop = false;
  std::vector<std::thread> workers;

  mutable std::mutex agg_mu;
  MirrorAggregator aggregator;

  // Traffic counters.
  std::atomic<int64_t> received{0}, not_mirrored{0}, mirrored{0}, dropped{0}, primary_errors{0},
      copy_errors{0}, compared{0}, too_large{0};
  std::mutex done_mu;
  std::condition_variable done_cv;

  bool Mirrored(std::string_view method) const {
    return std::find(o.methods.begin(), o.methods.end(), method) != o.methods.end();
  }

  void AcceptLoop() {
    int fd = acceptor->native_handle();
    while (!stopping.load()) {
      pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      boost::system::error_code ec;
      auto socket = std::make_unique<tcp::socket>(ioc);
      acceptor->accept(*socket, ec);
      if (ec) continue;
      {
        std::lock_guard<std::mutex> lock(conn_mu);
        if (active >= o.max_connections || stopping.load()) {
          socket->close(ec);
          continue;
        }
        ++active;
        conn_fds.insert(socket->native_handle());
      }
      std::thread([this, s = std::move(socket)]() mutable { Serve(std::move(s)); }).detach();
    }
  }

  // Serves one client connection until it closes, idles out, errs or the proxy stops. The
  // thread is detached: the socket (which refers to `ioc`) is destroyed before `active` drops,
  // after which Stop may destroy everything, so nothing of this object is touched after that.
  void Serve(std::unique_ptr<tcp::socket> owned) {
    ServeConnection(*owned);
    owned.reset();
    std::lock_guard<std::mutex> lock(conn_mu);
    --active;
    conn_cv.notify_all();
  }

  void ServeConnection(tcp::socket& socket) {
    boost::system::error_code ec;
    int fd = socket.native_handle();
    socket.set_option(tcp::no_delay(true), ec);
    beast::flat_buffer buffer;
    while (!stopping.load()) {
      if (buffer.size() == 0) {
        pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
        int idle_ms = static_cast<int>(o.idle_timeout.count());
        if (::poll(&p, 1, idle_ms) <= 0 || stopping.load()) break;
      }
      http::request_parser<http::string_body> parser;
      parser.body_limit(o.max_request_body);
      http::read(socket, buffer, parser, ec);
      if (ec == http::error::body_limit) {
        http::response<http::string_body> res =
            Plain(http::status::payload_too_large, "mirror: request body too large\n");
        res.keep_alive(false);
        http::write(socket, res, ec);
        break;
      }
      if (ec && ec != http::error::end_of_stream && ec != http::error::partial_message &&
          ec.category() == http::make_error_code(http::error::bad_target).category()) {
        // Not HTTP as Beast reads it: say so once, then close.
        http::response<http::string_body> res =
            Plain(http::status::bad_request, "mirror: malformed request\n");
        res.keep_alive(false);
        http::write(socket, res, ec);
        break;
      }
      if (ec) break;
      http::request<http::string_body> req = parser.release();
      std::optional<CopyJob> job;
      bool keep = Forward(socket, req, req.keep_alive() && !stopping.load(), &job);
      if (job) Enqueue(std::move(*job));
      received.fetch_add(1);
      if (o.max_requests > 0 && received.load() >= o.max_requests) done_cv.notify_all();
      if (!keep) break;
    }
    {
      std::lock_guard<std::mutex> lock(conn_mu);
      conn_fds.erase(fd);
    }
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
  }

  static http::response<http::string_body> Plain(http::status status, std::string text) {
    http::response<http::string_body> res{status, 11};
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = std::move(text);
    res.prepare_payload();
    return res;
  }

  static bool WritePlain(tcp::socket& socket, http::status status, std::string text, bool keep) {
    http::response<http::string_body> res = Plain(status, std::move(text));
    res.keep_alive(keep);
    boost::system::error_code ec;
    http::write(socket, res, ec);
    return !ec && keep;
  }

  // Sends the client's request to the primary and streams the answer back as it arrives: the
  // head once the primary's is in, then the body, with the primary's Content-Length when it gave
  // one and chunked otherwise (an HTTP/1.0 client gets the body up to the close). Keeps a copy of
  // the body up to max_compare_body for the comparison; a larger answer is counted too_large and
  // not copied. Returns whether the connection can take another request.
  bool Forward(tcp::socket& socket, const http::request<http::string_body>& req, bool keep,
               std::optional<CopyJob>* job) {
    std::string target(Sv(req.target()));
    if (target.empty() || target.front() != '/') {
      return WritePlain(socket, http::status::bad_request,
                        "mirror: expected a request target like /path\n", keep);
    }
    HttpRequest up;
    up.method = std::string(Sv(req.method_string()));
    up.url = JoinUpstreamUrl(o.primary, target);
    std::string_view connection;
    if (auto it = req.find(http::field::connection); it != req.end()) connection = Sv(it->value());
    for (const auto& f : req) {
      std::string_view name = Sv(f.name_string());
      if (IsHopHeader(name) || ListedInConnection(name, connection)) continue;
      up.headers.push_back({std::string(name), std::string(Sv(f.value()))});
    }
    up.body = req.body();

    const bool head_method = up.method == "HEAD";
    const bool mirrored_method = Mirrored(up.method);
    bool head_sent = false, chunked = false, client_gone = false, copy_too_large = false;
    long status = 0;
    std::string copy;
    boost::system::error_code ec;
    up.on_head = [&](const HttpResponse& head) -> Status {
      status = head.status;
      http::response<http::empty_body> res;
      res.version(11);
      res.result(static_cast<unsigned>(head.status));
      std::string_view up_connection;
      if (auto c = head.Header("Connection")) up_connection = *c;
      std::optional<std::string> length = head.Header("Content-Length");
      for (const HttpHeader& h : head.headers) {
        if (IsHopHeader(h.name) || ListedInConnection(h.name, up_connection)) continue;
        res.insert(h.name, h.value);
      }
      const bool no_body = head.status < 200 || head.status == 204 || head.status == 304;
      if (length && (head_method || !no_body)) {
        res.set(http::field::content_length, *length);  // for HEAD: the length a GET would have
      } else if (!head_method && !no_body) {
        chunked = req.version() >= 11;
        if (chunked) {
          res.chunked(true);
        } else {
          keep = false;  // an HTTP/1.0 client reads the body up to the close
        }
      }
      res.keep_alive(keep);
      http::response_serializer<http::empty_body> sr(res);
      http::write_header(socket, sr, ec);
      head_sent = true;
      if (ec) client_gone = true;
      return ec ? Status::Aborted("mirror: the client went away") : Status::Ok();
    };
    up.sink = [&](uint64_t, std::string_view data) -> Status {
      if (data.empty()) return Status::Ok();
      if (mirrored_method && !copy_too_large) {
        if (copy.size() + data.size() > o.max_compare_body) {
          copy_too_large = true;
          std::string().swap(copy);
        } else {
          copy.append(data);
        }
      }
      if (chunked) {
        char size_line[32];
        int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
        std::array<asio::const_buffer, 3> parts = {asio::buffer(size_line, static_cast<size_t>(n)),
                                                   asio::buffer(data.data(), data.size()),
                                                   asio::buffer("\r\n", 2)};
        asio::write(socket, parts, ec);
      } else {
        asio::write(socket, asio::buffer(data.data(), data.size()), ec);
      }
      if (ec) client_gone = true;
      return ec ? Status::Aborted("mirror: the client went away") : Status::Ok();
    };
    Result<HttpResponse> r = primary_client.Send(up);
    if (!r.ok()) {
      if (client_gone) return false;
      primary_errors.fetch_add(1);
      // The URL only: request bodies and header values stay out of logs.
      CUTOVER_LOG(kWarn) << "mirror: the primary did not answer " << up.method << " "
                         << RedactUrl(up.url);
      // Once the head is out the client can only learn of it from the connection closing.
      if (head_sent) return false;
      return WritePlain(socket, http::status::bad_gateway, "mirror: the primary did not answer\n",
                        false);
    }
    if (chunked) {
      asio::write(socket, asio::buffer("0\r\n\r\n", 5), ec);
      if (ec) return false;
    }
    if (!mirrored_method) {
      not_mirrored.fetch_add(1);
    } else if (copy_too_large) {
      too_large.fetch_add(1);  // no comparison possible: the copy is not sent
    } else {
      up.url.clear();
      *job = CopyJob{.method = std::move(up.method),
                     .target = std::move(target),
                     .headers = std::move(up.headers),
                     .body = std::move(up.body),
                     .primary = {.status = static_cast<int>(status), .body = std::move(copy)}};
    }
    return keep && !stopping.load();
  }

  void Enqueue(CopyJob job) {
    {
      std::lock_guard<std::mutex> lock(queue_mu);
      const uint64_t bytes = JobBytes(job);
      if (queue.size() >= o.queue_capacity || queued_bytes + bytes > o.max_queue_bytes ||
          workers_stop) {
        dropped.fetch_add(1);
        return;
      }
      queued_bytes += bytes;
      queue.push_back(std::move(job));
      mirrored.fetch_add(1);
    }
    queue_cv.notify_one();
  }

  // Sends a copy to one upstream. nullopt when it does not answer (counted copy_errors) or its
  // body passes max_compare_body (*too_big set; the transfer is cut there, so an endless body
  // ends).
  std::optional<MirrorResponse> SendCopy(const CopyJob& job, const std::string& base,
                                         bool* too_big) {
    MirrorResponse answer;
    HttpRequest r{.method = job.method,
                  .url = JoinUpstreamUrl(base, job.target),
                  .headers = job.headers,
                  .body = job.body};
    r.on_head = [&](const HttpResponse& head) {
      answer.status = static_cast<int>(head.status);
      return Status::Ok();
    };
    r.sink = [&](uint64_t, std::string_view data) -> Status {
      if (answer.body.size() + data.size() > o.max_compare_body) {
        *too_big = true;
        return Status::Aborted("mirror: answer larger than --max-body");
      }
      answer.body.append(data);
      return Status::Ok();
    };
    Result<HttpResponse> resp = copy_client.Send(r);
    if (*too_big) return std::nullopt;
    if (!resp.ok()) {
      copy_errors.fetch_add(1);
      CUTOVER_LOG(kInfo) << "mirror: no answer to a copy: " << job.method << " "
                         << RedactUrl(r.url);
      return std::nullopt;
    }
    answer.status = static_cast<int>(resp->status);
    return answer;
  }

  void Work() {
    // Copies yield the CPU to the client path: on Linux a thread has its own nice value. A
    // worker that falls behind fills the queue, and copies are then dropped and counted.
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), kWorkerNice);
    while (true) {
      CopyJob job;
      {
        std::unique_lock<std::mutex> lock(queue_mu);
        queue_cv.wait(lock, [&] { return workers_stop || !queue.empty(); });
        if (queue.empty()) return;  // workers_stop
        job = std::move(queue.front());
        queue.pop_front();
        queued_bytes -= JobBytes(job);
        ++busy;
      }
      bool too_big = false;
      std::optional<MirrorResponse> s = SendCopy(job, o.secondary, &too_big);
      std::optional<MirrorResponse> c = SendCopy(job, o.candidate, &too_big);
      if (too_big) too_large.fetch_add(1);
      if (s && c) {
        std::lock_guard<std::mutex> lock(agg_mu);
        aggregator.Add(job.primary, *s, *c);
        compared.fetch_add(1);
      }
      std::lock_guard<std::mutex> lock(queue_mu);
      --busy;
      if (queue.empty() && busy == 0) drained_cv.notify_all();
    }
  }
};

MirrorProxy::MirrorProxy(MirrorProxyOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

MirrorProxy::~MirrorProxy() { Stop(std::chrono::milliseconds(0)); }

Status MirrorProxy::CheckUpstreams() {
  const MirrorProxyOptions& o = impl_->o;
  HttpClient client(UpstreamOptions(o.check_timeout));
  for (const auto& [role, url] : {std::pair<const char*, const std::string*>{"primary", &o.primary},
                                  {"secondary", &o.secondary},
                                  {"candidate", &o.candidate}}) {
    Result<HttpResponse> r = client.Send({.method = "GET", .url = *url});
    if (!r.ok()) {
      return Status::Unavailable(std::string("mirror: the ") + role + " (" + RedactUrl(*url) +
                                 ") does not answer: " + r.status().message());
    }
  }
  return Status::Ok();
}

Status MirrorProxy::Start() {
  Impl& m = *impl_;
  CUTOVER_RETURN_IF_ERROR(ValidateMirrorProxyOptions(m.o));
  if (m.started) return Status::FailedPrecondition("mirror: already started");
  CUTOVER_ASSIGN_OR_RETURN(ListenAddress addr, ParseListen(m.o.listen));
  boost::system::error_code ec;
  tcp::endpoint ep(addr.host, static_cast<unsigned short>(addr.port));
  auto acceptor = std::make_unique<tcp::acceptor>(m.ioc);
  acceptor->open(ep.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(ep, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) acceptor->non_blocking(true, ec);
  if (ec) {
    return Status::Unavailable("mirror: cannot listen on " + m.o.listen + ": " + ec.message());
  }
  port_.store(acceptor->local_endpoint().port());
  m.acceptor = std::move(acceptor);
  m.started = true;
  for (int i = 0; i < m.o.workers; ++i) m.workers.emplace_back([&m] { m.Work(); });
  m.accept_thread = std::thread([&m] { m.AcceptLoop(); });
  return Status::Ok();
}

void MirrorProxy::WaitUntilDone(const std::atomic<bool>* stop,
                                std::optional<std::chrono::steady_clock::time_point> deadline) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.done_mu);
  while (true) {
    if (stop != nullptr && stop->load()) return;
    if (deadline && Clock::now() >= *deadline) return;
    if (m.o.max_requests > 0 && m.received.load() >= m.o.max_requests) return;
    m.done_cv.wait_for(lock, std::chrono::milliseconds(50));
  }
}

void MirrorProxy::Stop(std::chrono::milliseconds drain) {
  Impl& m = *impl_;
  if (!m.started || m.stopped) return;
  m.stopped = true;
  m.stopping.store(true);
  m.accept_thread.join();
  boost::system::error_code ec;
  m.acceptor->close(ec);
  {
    std::unique_lock<std::mutex> lock(m.conn_mu);
    // Wakes connection threads blocked in poll or read; each closes its own socket.
    for (int fd : m.conn_fds) ::shutdown(fd, SHUT_RDWR);
    m.conn_cv.wait(lock, [&] { return m.active == 0; });
  }
  {
    std::unique_lock<std::mutex> lock(m.queue_mu);
    m.drained_cv.wait_for(lock, drain, [&] { return m.queue.empty() && m.busy == 0; });
    m.workers_stop = true;
    m.dropped.fetch_add(static_cast<int64_t>(m.queue.size()));
    m.mirrored.fetch_sub(static_cast<int64_t>(m.queue.size()));
    m.queue.clear();
    m.queued_bytes = 0;
  }
  m.queue_cv.notify_all();
  for (std::thread& t : m.workers) t.join();
}

MirrorTraffic MirrorProxy::traffic() const {
  const Impl& m = *impl_;
  return {.received = m.received.load(),
          .not_mirrored = m.not_mirrored.load(),
          .mirrored = m.mirrored.load(),
          .dropped = m.dropped.load(),
          .primary_errors = m.primary_errors.load(),
          .copy_errors = m.copy_errors.load(),
          .compared = m.compared.load(),
          .too_large = m.too_large.load()};
}

MirrorSummary MirrorProxy::Summarize() const {
  std::lock_guard<std::mutex> lock(impl_->agg_mu);
  return impl_->aggregator.Summarize();
}

}  // namespace cutover::canary
