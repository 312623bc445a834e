// The HTTP client every tool uses: libcurl easy (one request at a time, HttpClient) and libcurl
// multi (many requests at once, HttpMulti), with one set of retry rules.
//
//   HttpClient client(options);
//   Result<HttpResponse> r = client.Send({.method = "GET", .url = url});
//
// Retries: an attempt that fails at the transport level (refused, reset, timed out, stalled below
// the low-speed limit, truncated body) or answers 408, 429, 500, 502, 503 or 504 is retried up to
// `max_attempts` in all, after an exponential backoff with full jitter, or after the server's
// Retry-After (capped). Other statuses (404, 403, ...) are responses, not errors. When retries run
// out on a status the last response is returned; on a transport failure, Status::Unavailable:
//   "GET http://host/x: Couldn't connect to server (Failed to connect to host port 80: Couldn't
//    connect to server) after 3 attempts"
// (curl's strerror, then its error buffer without timings, then the attempt count).
// URLs in messages and logs have their userinfo password and signature query values redacted;
// header values and credentials are never logged.
//
// Thread-safety: HttpClient::Send may be called from many threads at once (each call takes its
// own easy handle from a pool). An HttpMulti is used from one thread at a time; its callbacks run
// on the thread that calls Run().
#ifndef CUTOVER_CORE_HTTP_CLIENT_H_
#define CUTOVER_CORE_HTTP_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/rate_limiter.h"
#include "core/status.h"

namespace cutover {

struct HttpHeader {
  std::string name;
  std::string value;
};

// Where a request body comes from when it is not an in-memory string. Exactly one of `read` and
// `file_path` is set. Every attempt reads the body again from its start.
struct HttpUploadSource {
  // Positional reader: copies up to `len` bytes of the body starting at body offset `offset` into
  // `buf`; returns the count (0 only at the end) or an error, which fails the request unretried.
  std::function<Result<size_t>(uint64_t offset, char* buf, size_t len)> read;
  // Or: `length` bytes of this file starting at `file_offset` (to the end when length is unset).
  std::string file_path;
  uint64_t file_offset = 0;
  // The body size; unset with `read` means unknown (sent chunked).
  std::optional<uint64_t> length;

  // A body held in memory. `bytes` must outlive the request (retries read it again).
  static HttpUploadSource FromBytes(std::string_view bytes);
};

// Receives the body of a 2xx response as it arrives, so a large GET streams to a file. `offset` is
// the body offset of `data`; a retry starts again at offset 0 (the sink then drops what it had).
// A non-OK return aborts the request with that status, unretried.
using HttpSink = std::function<Status(uint64_t offset, std::string_view data)>;

struct HttpResponse;

struct HttpRequest {
  std::string method = "GET";  // any token: GET, PUT, HEAD, PROPFIND, ...
  std::string url;
  std::vector<HttpHeader> headers;
  // The body, when it fits in memory. Sent as-is with Content-Length; without a Content-Type
  // header none is sent.
  std::string body;
  // Or a streamed body (REQUIRES: `body` empty when set).
  std::optional<HttpUploadSource> upload;
  // When set, 2xx bodies go to the sink, not HttpResponse::body (other statuses' bodies, e.g. an
  // S3 error document, still land in the body).
  HttpSink sink;
  // When set, called once per attempt with the final response's status and headers (body empty),
  // before the sink sees the first body byte, or when the attempt ends for a response without a
  // body. With it the sink receives the body of every status, not only 2xx: a proxy streams any
  // answer on. A non-OK return aborts the request with that status, unretried. A caller that
  // passes what it gets on should allow one attempt (each attempt delivers its own head).
  std::function<Status(const HttpResponse& head)> on_head;
  // Overrides HttpClientOptions::timeout for this request (0 = no limit).
  std::optional<std::chrono::milliseconds> timeout;
};

// Figures from the last attempt (attempts and elapsed cover all of them).
struct HttpTransferStats {
  uint64_t bytes_sent = 0;                  // request body bytes
  uint64_t bytes_received = 0;              // response body bytes
  std::chrono::microseconds total_time{0};  // curl's total time of the last attempt
  std::chrono::microseconds elapsed{0};     // from the first attempt's start to the result
  bool connection_reused = false;           // the last attempt opened no new connection
  int attempts = 0;
};

struct HttpResponse {
  long status = 0;
  std::vector<HttpHeader> headers;  // of the final response, in order received
  std::string body;                 // empty when a sink took a 2xx body
  HttpTransferStats stats;

  // The first header named `name` (case-insensitive), or nullopt.
  std::optional<std::string> Header(std::string_view name) const;
};

// What the observer sees after each attempt.
struct HttpAttempt {
  const HttpRequest* request = nullptr;
  int attempt = 0;    // 1-based
  long status = 0;    // 0 when the transport failed
  int curl_code = 0;  // CURLcode of the attempt (0 = CURLE_OK)
  std::string error;  // curl's error text when the transport failed
  bool will_retry = false;
  std::chrono::milliseconds retry_delay{0};
  HttpTransferStats stats;
};

struct HttpClientOptions {
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds timeout{0};  // whole attempt; 0 = no limit (rely on low speed)
  // An attempt slower than `low_speed_limit` bytes/s for `low_speed_time` fails (and is retried).
  long low_speed_limit = 1;
  std::chrono::seconds low_speed_time{30};
  int max_attempts = 5;  // attempts in all, >= 1
  // Backoff before attempt n+1: uniform in [0, min(cap, base * 2^(n-1))].
  std::chrono::milliseconds backoff_base{200};
  std::chrono::milliseconds backoff_cap{20000};
  std::chrono::milliseconds retry_after_cap{60000};  // longest Retry-After honoured
  std::optional<uint64_t> rng_seed;                  // backoff jitter; unset = random
  // TLS: peers are verified unless `insecure`; `ca_file` replaces the system CA bundle (when
  // empty, DefaultCaBundle() is used).
  std::string ca_file;
  bool insecure = false;
  std::string user_agent;  // empty = "cutover/<version>"
  // AWS SigV4 signing ("aws:amz:us-east-1:s3"); with it username/password are the access key id
  // and the secret key. Without it, a non-empty username means HTTP Basic auth. Never logged.
  std::string aws_sigv4;
  std::string username;
  std::string password;
  // HttpMulti: transfers (and connections, HTTP/1.1, no multiplexing) at once.
  int max_in_flight = 8;
  // When set, every body byte sent or received passes this limiter first; clients and copies of
  // these options that share it share one total rate.
  std::shared_ptr<RateLimiter> rate_limit;
  // Called after every attempt on the thread that sent it (so it must be thread-safe when
  // HttpClient::Send runs on several threads). It must not call back into the client.
  std::function<void(const HttpAttempt&)> observer;
};

// The CA bundle verifying TLS peers when a caller names none. libcurl's compiled-in path is the
// build machine's (Debian: /etc/ssl/certs/ca-certificates.crt), which the packaged binary may not
// find on another distribution. In order: $SSL_CERT_FILE when set; libcurl's own default when it
// exists; else the first existing well-known bundle (Debian, RHEL, SUSE, Alpine layouts); else
// "" (libcurl's default, which then fails with its own message).
std::string PickCaBundle(const char* ssl_cert_file_env, const char* curl_default,
                         const std::function<bool(const std::string&)>& exists);
// PickCaBundle for this process (environment, libcurl's default, this file system), computed once.
const std::string& DefaultCaBundle();

// The retry rules, exposed for tests and for callers that schedule their own work.
bool IsRetryableHttpStatus(long status);
bool IsRetryableCurlCode(int curl_code);
// The wait a Retry-After value asks for (delta-seconds or an HTTP-date relative to `now`),
// clamped to [0, cap]; nullopt when it does not parse.
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value,
                                                         std::chrono::system_clock::time_point now,
                                                         std::chrono::milliseconds cap);
// The full-jitter backoff before attempt `failed_attempt + 1` (failed_attempt >= 1).
std::chrono::milliseconds BackoffDelay(int failed_attempt, std::chrono::milliseconds base,
                                       std::chrono::milliseconds cap, std::mt19937_64& rng);
// `url` with a userinfo password and signature/credential query values as "[REDACTED]".
std::string RedactUrl(std::string_view url);

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `request` with retries (see the header comment); reuses connections across calls.
  // InvalidArgument for a malformed request; the sink's or upload reader's error as returned.
  Result<HttpResponse> Send(const HttpRequest& request);

  const HttpClientOptions& options() const { return options_; }

 private:
  struct Pool;
  HttpClientOptions options_;
  std::unique_ptr<Pool> pool_;
};

// Many requests over libcurl multi, at most options.max_in_flight at once, each with the retry
// rules of HttpClient; a retry waits by timer without holding up other transfers. Connections
// are kept between Run() calls.
class HttpMulti {
 public:
  using Callback = std::function<void(Result<HttpResponse>)>;

  explicit HttpMulti(HttpClientOptions options = {});
  ~HttpMulti();
  HttpMulti(const HttpMulti&) = delete;
  HttpMulti& operator=(const HttpMulti&) = delete;

  // Queues `request`; `done` runs on the Run() thread once it has finished (after retries).
  // May be called from a callback during Run().
  void Add(HttpRequest request, Callback done);

  // Runs every queued request (and those callbacks add) to completion. Internal only for a
  // libcurl multi failure; per-request failures go to the callbacks.
  Status Run();

  // From a callback: the requests not yet started complete with Status::Aborted; those in
  // flight finish normally and Run() then returns.
  void Cancel();

  // The most transfers that were in flight at once during the last Run().
  int max_in_flight_seen() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cutover

#endif  // CUTOVER_CORE_HTTP_CLIENT_H_
