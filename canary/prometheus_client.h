// The metrics seam of the canary controller and its Prometheus implementation: instant queries
// (/api/v1/query) and range queries (/api/v1/query_range) over the project's HttpClient, each
// with a timeout, and errors classified for the controller:
//   InvalidArgument    the query itself is wrong (bad_data, execution): a spec error, fatal
//   Unavailable        Prometheus unreachable, or an error answer (an errored interval)
//   DeadlineExceeded   the query or the connection timed out (an errored interval)
//   Corruption         a success answer of the wrong shape (an errored interval)
// Every message starts with "prometheus".
//
// Thread-safety: a PrometheusClient may be used from several threads (HttpClient is).
#ifndef CUTOVER_CANARY_PROMETHEUS_CLIENT_H_
#define CUTOVER_CANARY_PROMETHEUS_CLIENT_H_

#include <chrono>
#include <memory>
#include <string>

#include "canary/prometheus.h"
#include "core/http_client.h"
#include "core/status.h"

namespace cutover::canary {

// Where the controller's numbers come from (Prometheus, a fake in tests).
class Metrics {
 public:
  virtual ~Metrics() = default;
  // The value of `expr` at unix time `time`.
  virtual Result<PromResult> Query(const std::string& expr, double time) = 0;
  // `expr` over [start, end] every `step_seconds`.
  virtual Result<PromResult> QueryRange(const std::string& expr, double start, double end,
                                        double step_seconds) = 0;
};

// True for errors that make an interval errored (retry next interval), false for a bad query.
bool IsTransientMetricsError(const Status& status);

// "a b&c" -> "a%20b%26c" (RFC 3986 unreserved characters kept).
std::string UrlEncode(std::string_view text);

class PrometheusClient : public Metrics {
 public:
  // `base_url` as in the spec ("http://127.0.0.1:9090"); `timeout` per query (sent to
  // Prometheus as `timeout=` too). Two attempts per query.
  PrometheusClient(std::string base_url, std::chrono::milliseconds timeout);

  Result<PromResult> Query(const std::string& expr, double time) override;
  Result<PromResult> QueryRange(const std::string& expr, double start, double end,
                                double step_seconds) override;

 private:
  Result<PromResult> Get(const std::string& path_and_query);

  std::string base_url_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<HttpClient> http_;
};

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_PROMETHEUS_CLIENT_H_
