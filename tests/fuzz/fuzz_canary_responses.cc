// Fuzzes what canary reads from its servers: Prometheus query responses (JSON), sample values,
// HAProxy's runtime API answers (show stat CSV, get weight, show info), nginx upstream files and
// what a command provider's get_weight prints.
// No crash; accepted results are sane (a scalar is one series, rows name their proxy, an
// upstream file renders back to text that parses to the same block).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "canary/command_traffic.h"
#include "canary/haproxy_traffic.h"
#include "canary/nginx_traffic.h"
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
  auto percent = cutover::canary::ParsePercentOutput(std::string(text));
  if (percent.ok()) FUZZ_CHECK(*percent >= 0 && *percent <= 100, "percent out of range");
  auto up = cutover::canary::ParseUpstream(text, "infer");
  if (up.ok()) {
    std::string rendered = cutover::canary::RenderUpstream(*up);
    auto again = cutover::canary::ParseUpstream(rendered, "infer");
    FUZZ_CHECK(again.ok(), "a rendered upstream file does not parse: " + again.status().message());
    FUZZ_CHECK(cutover::canary::UpstreamWeights(*again) == cutover::canary::UpstreamWeights(*up),
               "weights changed in a render round trip");
    FUZZ_CHECK(cutover::canary::RenderUpstream(*again) == rendered, "render is not stable");
  }
  return 0;
}
