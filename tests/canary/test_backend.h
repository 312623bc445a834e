// Test backends and load for the canary integration tests.
//
// TestBackend: an HTTP server on 127.0.0.1 (ScriptedHttpServer underneath) whose error rate and
// latency are set while it runs. Every request but GET /metrics is answered 200, or 500 for an
// exact share of them (every k-th), after the set latency; /metrics exposes its own latency
// histogram, labelled server="<name>", in the Prometheus text format:
//   test_request_duration_seconds_bucket{server="d1",le="0.005"} 12
//
// LoadGenerator: `threads` loops sending GET / to a URL, each at most `rps_per_thread` requests
// per second, on loopback, until stopped; counts answers by status class.
//
// WaitForTargetsUp: for a fixture's SetUp, until Prometheus has scraped every target once.
//
// WaitForMirrorPort: the port a `cutover canary mirror --listen 127.0.0.1:0` child says it listens
// on.
//
// Thread-safety: setters and counters may be used from any thread.
#ifndef CUTOVER_TESTS_CANARY_TEST_BACKEND_H_
#define CUTOVER_TESTS_CANARY_TEST_BACKEND_H_

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "tests/harness/scripted_http_server.h"
#include "tests/harness/servers.h"

namespace cutover::canary::testing {

class TestBackend {
 public:
  explicit TestBackend(std::string name);
  ~TestBackend();
  Status Start();
  int port() const { return server_.port(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port()); }
  // Fraction of requests answered 500 (0..1), and the latency of each answer.
  void SetErrorRate(double rate);
  void SetLatency(std::chrono::milliseconds latency);
  int64_t served() const { return served_.load(); }

 private:
  cutover::testing::ScriptedResponse Handle(const cutover::testing::RecordedRequest& r);
  std::string MetricsText();

  std::string name_;
  cutover::testing::ScriptedHttpServer server_;
  std::atomic<double> error_rate_{0};
  std::atomic<long> latency_ms_{0};
  std::atomic<int64_t> served_{0};
  std::mutex mu_;
  double error_credit_ = 0;
  std::vector<int64_t> buckets_;  // cumulative counts per kBounds entry
  double sum_ = 0;
  int64_t count_ = 0;
};

class LoadGenerator {
 public:
  LoadGenerator(std::string url, int threads, double rps_per_thread);
  ~LoadGenerator();  // stops
  void Start();
  void Stop();
  int64_t ok() const { return ok_.load(); }
  int64_t errors() const { return errors_.load(); }

 private:
  std::string url_;
  int threads_;
  double rps_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> ok_{0};
  std::atomic<int64_t> errors_{0};
  std::vector<std::thread> workers_;
};

// Waits (up to 20 s) until Prometheus at `prometheus_url` reports `targets` scrape targets up.
// Unavailable with Prometheus's view of its targets when it does not.
Status WaitForTargetsUp(const std::string& prometheus_url, int targets);

// Reads the child's log at `log_path` until its "listening on http://127.0.0.1:PORT" line is
// there (up to 10 s, while it runs); PORT, or 0.
int WaitForMirrorPort(const std::string& log_path, cutover::testing::ChildProcess& child);

}  // namespace cutover::canary::testing

#endif  // CUTOVER_TESTS_CANARY_TEST_BACKEND_H_
