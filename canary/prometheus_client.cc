#include "canary/prometheus_client.h"

#include <algorithm>
#include <cstdio>

namespace cutover::canary {
namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

bool IsTransientMetricsError(const Status& status) {
  return !status.ok() && status.code() != Code::kInvalidArgument;
}

std::string UrlEncode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

PrometheusClient::PrometheusClient(std::string base_url, std::chrono::milliseconds timeout)
    : base_url_(std::move(base_url)), timeout_(timeout) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  HttpClientOptions o;
  o.connect_timeout = timeout;
  o.timeout = timeout;
  o.max_attempts = 2;
  o.backoff_base = std::chrono::milliseconds(50);
  o.backoff_cap = std::chrono::milliseconds(200);
  o.retry_after_cap = std::chrono::milliseconds(0);
  http_ = std::make_unique<HttpClient>(o);
}

Result<PromResult> PrometheusClient::Get(const std::string& path_and_query) {
  std::string url = base_url_ + path_and_query +
                    "&timeout=" + std::to_string(std::max<long long>(1, timeout_.count())) + "ms";
  Result<HttpResponse> r = http_->Send({.method = "GET", .url = url});
  if (!r.ok()) {
    Status s = r.status();
    bool timed_out = s.code() == Code::kDeadlineExceeded ||
                     s.message().find("Timeout was reached") != std::string::npos;
    Code code = timed_out ? Code::kDeadlineExceeded : Code::kUnavailable;
    if (s.code() == Code::kInvalidArgument) code = Code::kInvalidArgument;
    return Status(code, "prometheus: " + s.message());
  }
  return ParsePromResponse(r->body, static_cast<int>(r->status));
}

Result<PromResult> PrometheusClient::Query(const std::string& expr, double time) {
  return Get("/api/v1/query?query=" + UrlEncode(expr) + "&time=" + Num(time));
}

Result<PromResult> PrometheusClient::QueryRange(const std::string& expr, double start, double end,
                                                double step_seconds) {
  return Get("/api/v1/query_range?query=" + UrlEncode(expr) + "&start=" + Num(start) +
             "&end=" + Num(end) + "&step=" + Num(step_seconds));
}

}  // namespace cutover::canary
