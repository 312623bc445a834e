#include "tests/canary/test_backend.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "canary/controller.h"
#include "canary/prometheus_client.h"
#include "core/file_util.h"
#include "core/http_client.h"
#include "tests/harness/servers.h"

namespace cutover::canary::testing {
namespace {

constexpr double kBounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

}  // namespace

TestBackend::TestBackend(std::string name)
    : name_(std::move(name)), buckets_(std::size(kBounds), 0) {}

TestBackend::~TestBackend() { server_.Stop(); }

Status TestBackend::Start() {
  server_.SetHandler([this](const cutover::testing::RecordedRequest& r) { return Handle(r); });
  return server_.Start();
}

void TestBackend::SetErrorRate(double rate) { error_rate_.store(rate); }
void TestBackend::SetLatency(std::chrono::milliseconds latency) {
  latency_ms_.store(latency.count());
}

cutover::testing::ScriptedResponse TestBackend::Handle(const cutover::testing::RecordedRequest& r) {
  if (r.target == "/metrics") {
    return {.status = 200,
            .headers = {{"Content-Type", "text/plain; version=0.0.4"}},
            .body = MetricsText()};
  }
  served_.fetch_add(1);
  long ms = latency_ms_.load();
  bool fail = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Exactly `rate` of the requests fail, spread evenly (every 1/rate-th).
    error_credit_ += error_rate_.load();
    if (error_credit_ >= 1) {
      error_credit_ -= 1;
      fail = true;
    }
    // The latency the service reports: the delay it was told to add, plus 0.1 ms of work.
    double seconds = ms / 1000.0 + 0.0001;
    for (size_t i = 0; i < std::size(kBounds); ++i) {
      if (seconds <= kBounds[i]) ++buckets_[i];
    }
    sum_ += seconds;
    ++count_;
  }
  return {.status = fail ? 500 : 200,
          .body = fail ? "fail\n" : "ok\n",
          .delay = std::chrono::milliseconds(ms)};
}

std::string TestBackend::MetricsText() {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out =
      "# HELP test_request_duration_seconds Request latency seen by the test backend.\n"
      "# TYPE test_request_duration_seconds histogram\n";
  char buf[512];
  for (size_t i = 0; i < std::size(kBounds); ++i) {
    std::snprintf(buf, sizeof buf,
                  "test_request_duration_seconds_bucket{server=\"%s\",le=\"%g\"} %lld\n",
                  name_.c_str(), kBounds[i], static_cast<long long>(buckets_[i]));
    out += buf;
  }
  std::snprintf(buf, sizeof buf,
                "test_request_duration_seconds_bucket{server=\"%s\",le=\"+Inf\"} %lld\n"
                "test_request_duration_seconds_sum{server=\"%s\"} %.6f\n"
                "test_request_duration_seconds_count{server=\"%s\"} %lld\n",
                name_.c_str(), static_cast<long long>(count_), name_.c_str(), sum_, name_.c_str(),
                static_cast<long long>(count_));
  out += buf;
  return out;
}

LoadGenerator::LoadGenerator(std::string url, int threads, double rps_per_thread)
    : url_(std::move(url)), threads_(threads), rps_(rps_per_thread) {}

LoadGenerator::~LoadGenerator() { Stop(); }

void LoadGenerator::Start() {
  stop_ = false;
  for (int t = 0; t < threads_; ++t) {
    workers_.emplace_back([this] {
      HttpClientOptions o;
      o.max_attempts = 1;
      o.timeout = std::chrono::milliseconds(2000);
      o.connect_timeout = std::chrono::milliseconds(1000);
      HttpClient client(o);
      auto period = std::chrono::duration<double>(1.0 / rps_);
      auto next = std::chrono::steady_clock::now();
      while (!stop_.load()) {
        Result<HttpResponse> r = client.Send({.method = "GET", .url = url_});
        if (r.ok() && r->status < 500) {
          ok_.fetch_add(1);
        } else {
          errors_.fetch_add(1);
        }
        next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
        auto now = std::chrono::steady_clock::now();
        if (next > now) {
          std::this_thread::sleep_until(next);
        } else {
          next = now;
        }
      }
    });
  }
}

void LoadGenerator::Stop() {
  stop_ = true;
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

Status WaitForTargetsUp(const std::string& prometheus_url, int targets) {
  PrometheusClient prom(prometheus_url, std::chrono::milliseconds(2000));
  for (int i = 0; i < 200; ++i) {
    auto r = prom.Query("count(up == 1)", RealClock().Now());
    if (r.ok()) {
      auto v = SingleSeriesValues(*r);
      if (v.ok() && !v->empty() && v->back() == targets) return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto r = cutover::testing::HttpFetch({.url = prometheus_url + "/api/v1/targets?state=active"});
  return Status::Unavailable("prometheus did not scrape all " + std::to_string(targets) +
                             " targets: " + r.body);
}

int WaitForMirrorPort(const std::string& log_path, cutover::testing::ChildProcess& child) {
  constexpr std::string_view kLine = "listening on http://127.0.0.1:";
  for (int i = 0; i < 200 && child.Running(); ++i) {
    std::string text = ReadFile(log_path).value_or("");
    if (size_t at = text.find(kLine); at != std::string::npos) {
      if (int port = std::atoi(text.c_str() + at + kLine.size()); port != 0) return port;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

}  // namespace cutover::canary::testing
