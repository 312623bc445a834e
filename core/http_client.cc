#include "core/http_client.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/random.h"
#include "core/strings.h"

#ifndef CUTOVER_VERSION
#define CUTOVER_VERSION "0.0.0"
#endif

namespace cutover {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// With a sink, the body of a non-2xx answer is kept in memory up to this size.
constexpr size_t kMaxErrorBody = 1 << 20;
constexpr std::string_view kRedacted = "[REDACTED]";

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

HttpUploadSource HttpUploadSource::FromBytes(std::string_view bytes) {
  HttpUploadSource src;
  src.length = bytes.size();
  src.read = [bytes](uint64_t offset, char* buf, size_t len) -> Result<size_t> {
    if (offset >= bytes.size()) return size_t{0};
    const size_t n = std::min<uint64_t>(len, bytes.size() - offset);
    std::memcpy(buf, bytes.data() + offset, n);
    return n;
  };
  return src;
}

namespace {

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::strchr("!#$%&'*+-.^_`|~", c) == nullptr) {
      return false;
    }
  }
  return true;
}

bool IsSecretHeaderName(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "authorization", "proxy-authorization",  "cookie",
      "set-cookie",    "x-amz-security-token", "x-api-key"};
  for (auto n : kNames) {
    if (EqualsIgnoreCase(name, n)) return true;
  }
  return IsSecretName(name);
}

bool IsSecretQueryName(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "x-amz-signature", "x-amz-credential", "x-amz-security-token", "signature", "sig", "token",
      "access_token",    "password"};
  for (auto n : kNames) {
    if (EqualsIgnoreCase(name, n)) return true;
  }
  return IsSecretName(name);
}

// Drops curl's " after N ms" so that messages are stable.
std::string StripTiming(std::string text) {
  for (size_t pos = text.find(" after "); pos != std::string::npos;
       pos = text.find(" after ", pos + 1)) {
    size_t i = pos + 7;
    size_t digits = i;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
      ++digits;
    }
    if (digits > i && text.compare(digits, 3, " ms") == 0) {
      text.erase(pos, digits + 3 - pos);
      pos = pos == 0 ? 0 : pos - 1;
    }
  }
  return text;
}

// One request's state across its attempts; drives one easy handle at a time.
class Transfer {
 public:
  enum class Next { kDone, kRetry };

  Transfer(const HttpClientOptions& options, const HttpRequest& request)
      : options_(options), request_(request), start_(Clock::now()) {}
  ~Transfer() {
    if (headers_ != nullptr) curl_slist_free_all(headers_);
    if (fd_ >= 0) ::close(fd_);
  }
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  Status Validate() const {
    const HttpRequest& r = request_;
    std::string where = r.method + " " + RedactUrl(r.url);
    if (!IsToken(r.method)) return Status::InvalidArgument("http: bad method in " + where);
    if (r.url.rfind("http://", 0) != 0 && r.url.rfind("https://", 0) != 0) {
      return Status::InvalidArgument("http: URL must start with http:// or https://: " + where);
    }
    if (r.upload.has_value()) {
      if (!r.body.empty()) {
        return Status::InvalidArgument("http: both a body and an upload source in " + where);
      }
      if (static_cast<bool>(r.upload->read) == !r.upload->file_path.empty()) {
        return Status::InvalidArgument(
            "http: upload source needs exactly one of read and "
            "file_path in " +
            where);
      }
    }
    for (const HttpHeader& h : r.headers) {
      if (!IsToken(h.name) || h.value.find_first_of("\r\n") != std::string::npos) {
        return Status::InvalidArgument("http: bad header '" + h.name + "' in " + where);
      }
    }
    if (options_.max_attempts < 1) {
      return Status::InvalidArgument("http: max_attempts must be >= 1");
    }
    return Status::Ok();
  }

  // Resets `easy` and sets every option for the next attempt.
  Status Prepare(CURL* easy) {
    ++attempt_;
    resp_ = HttpResponse();
    head_ended_ = false;
    head_delivered_ = false;
    sink_offset_ = 0;
    upload_offset_ = 0;
    callback_error_ = Status::Ok();
    errbuf_[0] = '\0';
    attempt_start_ = Clock::now();
    if (attempt_ == 1) CUTOVER_RETURN_IF_ERROR(BuildOnce());

    curl_easy_reset(easy);
    curl_easy_setopt(easy, CURLOPT_URL, request_.url.c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf_);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, this);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &Transfer::HeaderCb);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, this);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Transfer::WriteCb);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    user_agent_ = options_.user_agent.empty() ? std::string("cutover/") + CUTOVER_VERSION
                                              : options_.user_agent;
    curl_easy_setopt(easy, CURLOPT_USERAGENT, user_agent_.c_str());
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connect_timeout.count()));
    milliseconds timeout = request_.timeout.value_or(options_.timeout);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    if (options_.low_speed_limit > 0 && options_.low_speed_time.count() > 0) {
      curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, options_.low_speed_limit);
      curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME,
                       static_cast<long>(options_.low_speed_time.count()));
    }
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, options_.insecure ? 0L : 1L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, options_.insecure ? 0L : 2L);
    const std::string& ca = options_.ca_file.empty() ? DefaultCaBundle() : options_.ca_file;
    if (!ca.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, ca.c_str());
    if (!options_.aws_sigv4.empty()) {
      curl_easy_setopt(easy, CURLOPT_AWS_SIGV4, options_.aws_sigv4.c_str());
      curl_easy_setopt(easy, CURLOPT_USERNAME, options_.username.c_str());
      curl_easy_setopt(easy, CURLOPT_PASSWORD, options_.password.c_str());
    } else if (!options_.username.empty()) {
      curl_easy_setopt(easy, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
      curl_easy_setopt(easy, CURLOPT_USERNAME, options_.username.c_str());
      curl_easy_setopt(easy, CURLOPT_PASSWORD, options_.password.c_str());
    }

    const std::string& m = request_.method;
    bool streamed = request_.upload.has_value() || (m == "PUT" && !request_.body.empty());
    if (m == "HEAD") {
      curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
    } else if (streamed || m == "PUT") {
      curl_easy_setopt(easy, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(easy, CURLOPT_READFUNCTION, &Transfer::ReadCb);
      curl_easy_setopt(easy, CURLOPT_READDATA, this);
      curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, &Transfer::SeekCb);
      curl_easy_setopt(easy, CURLOPT_SEEKDATA, this);
      curl_easy_setopt(easy, CURLOPT_INFILESIZE_LARGE, upload_length_);
      if (m != "PUT") curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, m.c_str());
    } else if (!request_.body.empty() || m == "POST") {
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request_.body.size()));
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request_.body.data());
      if (m != "POST") curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, m.c_str());
    } else if (m == "GET") {
      curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, m.c_str());
    }
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers_);

    if (LogEnabled(LogLevel::kDebug)) {
      CUTOVER_LOG(kDebug) << "http: " << m << " " << RedactUrl(request_.url) << " attempt "
                          << attempt_ << "/" << options_.max_attempts;
      for (const HttpHeader& h : request_.headers) {
        CUTOVER_LOG(kDebug) << "http: > " << h.name << ": "
                            << (IsSecretHeaderName(h.name) ? kRedacted : h.value);
      }
    }
    return Status::Ok();
  }

  // Looks at the attempt that just ended with `rc`; on kRetry, *delay is the wait before the next.
  Next Finish(CURL* easy, CURLcode rc, std::mt19937_64& rng, std::mutex* rng_mu,
              milliseconds* delay) {
    HttpTransferStats& st = resp_.stats;
    curl_off_t up = 0, down = 0, total_us = 0;
    long connects = 0;
    curl_easy_getinfo(easy, CURLINFO_SIZE_UPLOAD_T, &up);
    curl_easy_getinfo(easy, CURLINFO_SIZE_DOWNLOAD_T, &down);
    curl_easy_getinfo(easy, CURLINFO_TOTAL_TIME_T, &total_us);
    curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &connects);
    st.bytes_sent = static_cast<uint64_t>(up);
    st.bytes_received = static_cast<uint64_t>(down);
    st.total_time = std::chrono::microseconds(total_us);
    st.connection_reused = rc == CURLE_OK && connects == 0;
    st.attempts = attempt_;
    st.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_);

    if (rc == CURLE_OK && !head_ended_) {
      // The connection closed inside the response head: curl takes what came as the answer (a
      // HEAD then has no body to miss), but a header may be lost. A transport failure.
      rc = CURLE_PARTIAL_FILE;
      std::snprintf(errbuf_, sizeof errbuf_, "response head cut short");
    }
    if (rc == CURLE_OK && callback_error_.ok()) DeliverHead();  // a response without a body
    HttpAttempt a;
    a.request = &request_;
    a.attempt = attempt_;
    a.curl_code = rc;
    bool can_retry = attempt_ < options_.max_attempts;
    std::string where = request_.method + " " + RedactUrl(request_.url);
    if (!callback_error_.ok()) {
      result_ = callback_error_;
      a.error = callback_error_.message();
    } else if (rc == CURLE_OK) {
      long code = 0;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
      resp_.status = code;
      a.status = code;
      if (can_retry && IsRetryableHttpStatus(code)) {
        std::optional<milliseconds> after;
        if (auto v = resp_.Header("Retry-After")) {
          after = ParseRetryAfter(*v, std::chrono::system_clock::now(), options_.retry_after_cap);
        }
        a.will_retry = true;
        a.retry_delay = after ? *after : Backoff(rng, rng_mu);
      } else {
        result_ = std::move(resp_);
      }
    } else {
      std::string detail = StripTiming(errbuf_);
      a.error = curl_easy_strerror(rc);
      if (!detail.empty() && detail != a.error) a.error += " (" + detail + ")";
      if (can_retry && IsRetryableCurlCode(rc)) {
        a.will_retry = true;
        a.retry_delay = Backoff(rng, rng_mu);
      } else {
        result_ =
            Status::Unavailable(where + ": " + a.error + " after " + std::to_string(attempt_) +
                                (attempt_ == 1 ? " attempt" : " attempts"));
      }
    }
    a.stats = result_.has_value() && result_->ok() ? result_->value().stats : st;
    if (LogEnabled(LogLevel::kDebug)) {
      std::ostringstream line;
      line << "http: " << where << " attempt " << attempt_ << ": ";
      if (a.status != 0) {
        line << a.status;
      } else {
        line << a.error;
      }
      line << " in " << st.total_time.count() / 1000 << " ms ("
           << (st.connection_reused ? "reused" : "new") << " connection)";
      if (a.will_retry) line << ", retry in " << a.retry_delay.count() << " ms";
      Log(LogLevel::kDebug, line.str());
    }
    if (options_.observer) options_.observer(a);
    *delay = a.retry_delay;
    return a.will_retry ? Next::kRetry : Next::kDone;
  }

  // REQUIRES: the last Finish returned kDone.
  Result<HttpResponse> TakeResult() { return std::move(*result_); }

 private:
  milliseconds Backoff(std::mt19937_64& rng, std::mutex* mu) {
    std::unique_lock<std::mutex> lock;
    if (mu != nullptr) lock = std::unique_lock<std::mutex>(*mu);
    return BackoffDelay(attempt_, options_.backoff_base, options_.backoff_cap, rng);
  }

  // The header list and the upload length, the same for every attempt.
  Status BuildOnce() {
    bool has_type = false;
    for (const HttpHeader& h : request_.headers) {
      if (EqualsIgnoreCase(h.name, "Content-Type")) has_type = true;
      std::string line = h.name + (h.value.empty() ? ";" : ": " + h.value);
      headers_ = curl_slist_append(headers_, line.c_str());
    }
    bool post_fields = !request_.upload.has_value() && request_.method != "PUT" &&
                       request_.method != "HEAD" &&
                       (!request_.body.empty() || request_.method == "POST");
    if (post_fields && !has_type) headers_ = curl_slist_append(headers_, "Content-Type:");
    upload_length_ = static_cast<curl_off_t>(request_.body.size());
    if (request_.upload.has_value()) {
      const HttpUploadSource& u = *request_.upload;
      if (!u.file_path.empty()) {
        fd_ = ::open(u.file_path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0) {
          return Status::IoError("http: cannot open " + u.file_path + ": " + std::strerror(errno));
        }
        struct stat sb;
        if (::fstat(fd_, &sb) != 0) {
          return Status::IoError("http: cannot stat " + u.file_path + ": " + std::strerror(errno));
        }
        uint64_t size = static_cast<uint64_t>(sb.st_size);
        if (u.file_offset > size || (u.length && u.file_offset + *u.length > size)) {
          return Status::InvalidArgument("http: upload range beyond the end of " + u.file_path);
        }
        upload_length_ = static_cast<curl_off_t>(u.length.value_or(size - u.file_offset));
      } else {
        upload_length_ = u.length ? static_cast<curl_off_t>(*u.length) : -1;
      }
    }
    return Status::Ok();
  }

  static size_t HeaderCb(char* data, size_t size, size_t n, void* self_ptr) {
    auto* self = static_cast<Transfer*>(self_ptr);
    std::string_view line = Trim(std::string_view(data, size * n));
    if (line.rfind("HTTP/", 0) == 0) {  // a new response (after 100 Continue or a redirect)
      self->head_ended_ = false;
      self->resp_.headers.clear();
      self->resp_.status = 0;
      size_t sp = line.find(' ');
      if (sp != std::string_view::npos) self->resp_.status = std::atol(line.data() + sp + 1);
    } else if (line.empty()) {  // the blank line that ends a head
      self->head_ended_ = true;
    } else if (size_t colon = line.find(':'); colon != std::string_view::npos && colon > 0) {
      self->resp_.headers.push_back(
          {std::string(Trim(line.substr(0, colon))), std::string(Trim(line.substr(colon + 1)))});
    }
    return size * n;
  }

  static size_t WriteCb(char* data, size_t size, size_t n, void* self_ptr) {
    auto* self = static_cast<Transfer*>(self_ptr);
    size_t len = size * n;
    if (self->options_.rate_limit) self->options_.rate_limit->Acquire(len);
    long status = self->resp_.status;
    if (self->request_.on_head) {
      if (!self->DeliverHead()) return 0;
      status = 200;  // with on_head every status's body goes to the sink
    }
    if (self->request_.sink && status >= 200 && status < 300) {
      Status s = self->request_.sink(self->sink_offset_, std::string_view(data, len));
      if (!s.ok()) {
        self->callback_error_ = s;
        return 0;
      }
      self->sink_offset_ += len;
      return len;
    }
    if (self->request_.sink) {
      len = std::min(len, kMaxErrorBody - std::min(kMaxErrorBody, self->resp_.body.size()));
      self->resp_.body.append(data, len);
      return size * n;
    }
    self->resp_.body.append(data, len);
    return len;
  }

  // Calls request_.on_head once per attempt; false (the error kept) when it fails.
  bool DeliverHead() {
    if (!request_.on_head || head_delivered_) return true;
    head_delivered_ = true;
    Status s = request_.on_head(resp_);
    if (s.ok()) return true;
    callback_error_ = std::move(s);
    return false;
  }

  static size_t ReadCb(char* buf, size_t size, size_t n, void* self_ptr) {
    auto* self = static_cast<Transfer*>(self_ptr);
    size_t k = ReadBody(self, buf, size * n);
    if (k != CURL_READFUNC_ABORT && self->options_.rate_limit) {
      self->options_.rate_limit->Acquire(k);
    }
    return k;
  }

  static size_t ReadBody(Transfer* self, char* buf, size_t want) {
    const HttpRequest& r = self->request_;
    if (!r.upload.has_value()) {
      size_t left = r.body.size() - std::min<size_t>(r.body.size(), self->upload_offset_);
      size_t k = std::min(want, left);
      std::memcpy(buf, r.body.data() + self->upload_offset_, k);
      self->upload_offset_ += k;
      return k;
    }
    const HttpUploadSource& u = *r.upload;
    if (self->upload_length_ >= 0) {
      uint64_t left = static_cast<uint64_t>(self->upload_length_) - self->upload_offset_;
      want = static_cast<size_t>(std::min<uint64_t>(want, left));
      if (want == 0) return 0;
    }
    if (u.read) {
      Result<size_t> got = u.read(self->upload_offset_, buf, want);
      if (!got.ok()) {
        self->callback_error_ = got.status();
        return CURL_READFUNC_ABORT;
      }
      size_t k = std::min(*got, want);
      self->upload_offset_ += k;
      return k;
    }
    ssize_t k =
        ::pread(self->fd_, buf, want, static_cast<off_t>(u.file_offset + self->upload_offset_));
    if (k < 0 || (k == 0 && want > 0)) {
      self->callback_error_ =
          Status::IoError("http: reading " + u.file_path + ": " +
                          (k < 0 ? std::string(std::strerror(errno)) : std::string("file shrank")));
      return CURL_READFUNC_ABORT;
    }
    self->upload_offset_ += static_cast<uint64_t>(k);
    return static_cast<size_t>(k);
  }

  static int SeekCb(void* self_ptr, curl_off_t offset, int origin) {
    auto* self = static_cast<Transfer*>(self_ptr);
    if (origin != SEEK_SET || offset < 0) return CURL_SEEKFUNC_CANTSEEK;
    self->upload_offset_ = static_cast<uint64_t>(offset);
    return CURL_SEEKFUNC_OK;
  }

  const HttpClientOptions& options_;
  const HttpRequest& request_;
  Clock::time_point start_;
  Clock::time_point attempt_start_;
  int attempt_ = 0;
  curl_slist* headers_ = nullptr;
  std::string user_agent_;
  curl_off_t upload_length_ = 0;
  int fd_ = -1;
  char errbuf_[CURL_ERROR_SIZE] = {};
  HttpResponse resp_;
  bool head_ended_ = false;      // the blank line after the last response head was seen
  bool head_delivered_ = false;  // request_.on_head was called in this attempt
  uint64_t sink_offset_ = 0;
  uint64_t upload_offset_ = 0;
  Status callback_error_;
  std::optional<Result<HttpResponse>> result_;
};

std::mt19937_64 MakeRng(const std::optional<uint64_t>& seed) {
  return std::mt19937_64(seed ? *seed : RandomSeed());
}

}  // namespace

std::string PickCaBundle(const char* ssl_cert_file_env, const char* curl_default,
                         const std::function<bool(const std::string&)>& exists) {
  if (ssl_cert_file_env != nullptr && *ssl_cert_file_env != '\0') return ssl_cert_file_env;
  if (curl_default != nullptr && *curl_default != '\0' && exists(curl_default)) return "";
  static constexpr const char* kWellKnown[] = {
      "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Arch, Gentoo
      "/etc/pki/tls/certs/ca-bundle.crt",                   // RHEL, Fedora, Amazon Linux
      "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL 7+
      "/etc/ssl/ca-bundle.pem",                             // SUSE
      "/etc/ssl/cert.pem",                                  // Alpine
  };
  for (const char* path : kWellKnown) {
    if (exists(path)) return path;
  }
  return "";
}

const std::string& DefaultCaBundle() {
  static const std::string bundle = [] {
    const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
    return PickCaBundle(std::getenv("SSL_CERT_FILE"), info != nullptr ? info->cainfo : nullptr,
                        [](const std::string& path) { return ::access(path.c_str(), R_OK) == 0; });
  }();
  return bundle;
}

bool IsRetryableHttpStatus(long status) {
  return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 ||
         status == 504;
}

bool IsRetryableCurlCode(int curl_code) {
  switch (static_cast<CURLcode>(curl_code)) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
      return true;
    default:
      return false;
  }
}

std::optional<milliseconds> ParseRetryAfter(std::string_view value,
                                            std::chrono::system_clock::time_point now,
                                            milliseconds cap) {
  value = Trim(value);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (value.size() > 9) return cap;  // longer than any cap we would honour
    milliseconds wait(std::stoll(std::string(value)) * 1000);
    return std::min(wait, cap);
  }
  std::string text(value);
  time_t when = curl_getdate(text.c_str(), nullptr);
  if (when == -1) return std::nullopt;
  auto delta =
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::from_time_t(when) - now);
  return std::clamp(delta, milliseconds(0), cap);
}

milliseconds BackoffDelay(int failed_attempt, milliseconds base, milliseconds cap,
                          std::mt19937_64& rng) {
  if (base.count() <= 0 || cap.count() <= 0) return milliseconds(0);
  int shift = std::clamp(failed_attempt - 1, 0, 30);
  int64_t ceiling = base.count();
  for (int i = 0; i < shift && ceiling < cap.count(); ++i) ceiling *= 2;
  ceiling = std::min<int64_t>(ceiling, cap.count());
  std::uniform_int_distribution<int64_t> dist(0, ceiling);
  return milliseconds(dist(rng));
}

std::string RedactUrl(std::string_view url) {
  std::string out;
  size_t scheme = url.find("://");
  size_t auth = scheme == std::string_view::npos ? 0 : scheme + 3;
  size_t auth_end = url.find_first_of("/?#", auth);
  if (auth_end == std::string_view::npos) auth_end = url.size();
  size_t at = url.substr(0, auth_end).rfind('@');
  if (at != std::string_view::npos && at >= auth) {
    size_t colon = url.substr(0, at).find(':', auth);
    if (colon != std::string_view::npos) {
      out.append(url.substr(0, colon + 1));
      out.append(kRedacted);
      out.append(url.substr(at, auth_end - at));
    } else {
      out.append(url.substr(0, auth_end));
    }
  } else {
    out.append(url.substr(0, auth_end));
  }
  std::string_view rest = url.substr(auth_end);
  size_t q = rest.find('?');
  if (q == std::string_view::npos) {
    out.append(rest);
    return out;
  }
  out.append(rest.substr(0, q + 1));
  std::string_view query = rest.substr(q + 1);
  size_t hash = query.find('#');
  std::string_view fragment = hash == std::string_view::npos ? "" : query.substr(hash);
  query = query.substr(0, hash);
  bool first = true;
  while (true) {
    size_t amp = query.find('&');
    std::string_view param = query.substr(0, amp);
    if (!first) out.push_back('&');
    first = false;
    size_t eq = param.find('=');
    if (eq != std::string_view::npos && IsSecretQueryName(param.substr(0, eq))) {
      out.append(param.substr(0, eq + 1));
      out.append(kRedacted);
    } else {
      out.append(param);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  out.append(fragment);
  return out;
}

std::optional<std::string> HttpResponse::Header(std::string_view name) const {
  for (const HttpHeader& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return h.value;
  }
  return std::nullopt;
}

// ---- HttpClient ----

struct HttpClient::Pool {
  std::mutex mu;
  std::vector<CURL*> free;
  std::mutex rng_mu;
  std::mt19937_64 rng;

  ~Pool() {
    for (CURL* e : free) curl_easy_cleanup(e);
  }
  CURL* Take() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!free.empty()) {
        CURL* e = free.back();
        free.pop_back();
        return e;
      }
    }
    return curl_easy_init();
  }
  void Give(CURL* e) {
    std::lock_guard<std::mutex> lock(mu);
    free.push_back(e);
  }
};

HttpClient::HttpClient(HttpClientOptions options)
    : options_(std::move(options)), pool_(std::make_unique<Pool>()) {
  GlobalInit();
  pool_->rng = MakeRng(options_.rng_seed);
}

HttpClient::~HttpClient() = default;

Result<HttpResponse> HttpClient::Send(const HttpRequest& request) {
  Transfer t(options_, request);
  CUTOVER_RETURN_IF_ERROR(t.Validate());
  CURL* easy = pool_->Take();
  if (easy == nullptr) return Status::Internal("http: curl_easy_init failed");
  while (true) {
    Status s = t.Prepare(easy);
    if (!s.ok()) {
      pool_->Give(easy);
      return s;
    }
    CURLcode rc = curl_easy_perform(easy);
    milliseconds delay(0);
    if (t.Finish(easy, rc, pool_->rng, &pool_->rng_mu, &delay) == Transfer::Next::kDone) break;
    std::this_thread::sleep_for(delay);
  }
  pool_->Give(easy);
  return t.TakeResult();
}

// ---- HttpMulti ----

struct HttpMulti::Impl {
  struct Entry {
    HttpRequest request;
    Callback done;
    std::unique_ptr<Transfer> transfer;
  };

  HttpClientOptions options;
  CURLM* multi = nullptr;
  std::vector<CURL*> free_easy;
  std::deque<std::unique_ptr<Entry>> pending;
  std::multimap<Clock::time_point, std::unique_ptr<Entry>> delayed;
  std::unordered_map<CURL*, std::unique_ptr<Entry>> active;
  std::mt19937_64 rng;
  bool cancelled = false;
  int max_seen = 0;

  int Limit() const { return std::max(1, options.max_in_flight); }

  // Starts `e` on a free easy handle; false (with the callback run) when it cannot start.
  void Start(std::unique_ptr<Entry> e) {
    if (!e->transfer) {
      e->transfer = std::make_unique<Transfer>(options, e->request);
      Status v = e->transfer->Validate();
      if (!v.ok()) {
        e->done(v);
        return;
      }
    }
    CURL* easy = nullptr;
    if (!free_easy.empty()) {
      easy = free_easy.back();
      free_easy.pop_back();
    } else {
      easy = curl_easy_init();
      if (easy == nullptr) {
        e->done(Status::Internal("http: curl_easy_init failed"));
        return;
      }
    }
    Status s = e->transfer->Prepare(easy);
    if (!s.ok()) {
      free_easy.push_back(easy);
      e->done(s);
      return;
    }
    CURLMcode mc = curl_multi_add_handle(multi, easy);
    if (mc != CURLM_OK) {
      free_easy.push_back(easy);
      e->done(
          Status::Internal(std::string("http: curl_multi_add_handle: ") + curl_multi_strerror(mc)));
      return;
    }
    active.emplace(easy, std::move(e));
    max_seen = std::max(max_seen, static_cast<int>(active.size()));
  }

  void AbortQueued() {
    while (!pending.empty() || !delayed.empty()) {
      std::unique_ptr<Entry> e;
      if (!pending.empty()) {
        e = std::move(pending.front());
        pending.pop_front();
      } else {
        e = std::move(delayed.begin()->second);
        delayed.erase(delayed.begin());
      }
      e->done(Status::Aborted("http: " + e->request.method + " " + RedactUrl(e->request.url) +
                              ": cancelled"));
    }
  }

  Status Run() {
    max_seen = 0;
    cancelled = false;
    while (true) {
      if (cancelled) AbortQueued();
      Clock::time_point now = Clock::now();
      while (static_cast<int>(active.size()) < Limit()) {
        std::unique_ptr<Entry> e;
        if (!delayed.empty() && delayed.begin()->first <= now) {
          e = std::move(delayed.begin()->second);
          delayed.erase(delayed.begin());
        } else if (!pending.empty()) {
          e = std::move(pending.front());
          pending.pop_front();
        } else {
          break;
        }
        Start(std::move(e));
        if (cancelled) AbortQueued();
      }
      if (active.empty() && pending.empty() && delayed.empty()) break;

      int running = 0;
      CURLMcode mc = curl_multi_perform(multi, &running);
      if (mc != CURLM_OK) {
        return Status::Internal(std::string("http: curl_multi_perform: ") +
                                curl_multi_strerror(mc));
      }
      bool finished_any = false;
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL* easy = msg->easy_handle;
        CURLcode rc = msg->data.result;
        curl_multi_remove_handle(multi, easy);
        auto it = active.find(easy);
        if (it == active.end()) continue;
        std::unique_ptr<Entry> e = std::move(it->second);
        active.erase(it);
        milliseconds delay(0);
        Transfer::Next next = e->transfer->Finish(easy, rc, rng, nullptr, &delay);
        free_easy.push_back(easy);
        finished_any = true;
        if (next == Transfer::Next::kDone) {
          Callback done = std::move(e->done);
          Result<HttpResponse> r = e->transfer->TakeResult();
          e.reset();
          done(std::move(r));
        } else {
          delayed.emplace(Clock::now() + delay, std::move(e));
        }
      }
      if (finished_any) continue;  // refill the free slots before waiting

      long wait_ms = 1000;
      if (!delayed.empty()) {
        auto until =
            std::chrono::duration_cast<milliseconds>(delayed.begin()->first - Clock::now());
        wait_ms = std::clamp<long>(static_cast<long>(until.count()), 0, 1000);
        if (static_cast<int>(active.size()) >= Limit()) wait_ms = 1000;
      }
      if (!active.empty() || wait_ms > 0) {
        if (active.empty()) {
          std::this_thread::sleep_for(milliseconds(wait_ms));
        } else {
          mc = curl_multi_poll(multi, nullptr, 0, static_cast<int>(wait_ms), nullptr);
          if (mc != CURLM_OK) {
            return Status::Internal(std::string("http: curl_multi_poll: ") +
                                    curl_multi_strerror(mc));
          }
        }
      }
    }
    return Status::Ok();
  }
};

HttpMulti::HttpMulti(HttpClientOptions options) : impl_(std::make_unique<Impl>()) {
  GlobalInit();
  impl_->options = std::move(options);
  impl_->rng = MakeRng(impl_->options.rng_seed);
  impl_->multi = curl_multi_init();
  long n = impl_->Limit();
  curl_multi_setopt(impl_->multi, CURLMOPT_MAX_HOST_CONNECTIONS, n);
  curl_multi_setopt(impl_->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, n);
  curl_multi_setopt(impl_->multi, CURLMOPT_MAXCONNECTS, n);
  curl_multi_setopt(impl_->multi, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_NOTHING));
}

HttpMulti::~HttpMulti() {
  for (auto& [easy, e] : impl_->active) {
    curl_multi_remove_handle(impl_->multi, easy);
    curl_easy_cleanup(easy);
  }
  impl_->active.clear();
  for (CURL* e : impl_->free_easy) curl_easy_cleanup(e);
  curl_multi_cleanup(impl_->multi);
}

void HttpMulti::Add(HttpRequest request, Callback done) {
  auto e = std::make_unique<Impl::Entry>();
  e->request = std::move(request);
  e->done = std::move(done);
  impl_->pending.push_back(std::move(e));
}

Status HttpMulti::Run() { return impl_->Run(); }

void HttpMulti::Cancel() { impl_->cancelled = true; }

int HttpMulti::max_in_flight_seen() const { return impl_->max_seen; }

}  // namespace cutover
