// Fuzzes what canary reads from its servers: Prometheus query responses (JSON), sample values,
// and HAProxy's runtime API answers (show stat CSV, get weight, show info). No crash; accepted
// results are sane (a scalar is one series, rows name their proxy).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "canary/haproxy_traffic.h"
#include "canary/prometheus.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (int status : {200, 400, 503}) {
    auto r = cutover::canary::ParsePromResponse(text, status);
    if (r.ok() && r->type == cutover::canary::PromResultType::kScalar) {
      FUZZ_CHECK(r->series.size() == 1, "a scalar that is not one series");
    }
  }
  (void)cutover::canary::ParsePromValue(text);
  auto rows = cutover::canary::ParseShowStat(text);
  if (rows.ok()) {
    for (const auto& row : *rows) FUZZ_CHECK(row.proxy.size() <= size, row.proxy);
  }
  auto w = cutover::canary::ParseGetWeight(text);
  if (w.ok()) FUZZ_CHECK(*w >= 0 && *w <= 256, "weight out of range");
  (void)cutover::canary::ParseShowInfo(text);
  return 0;
}
