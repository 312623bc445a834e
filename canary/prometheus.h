// Parsing of Prometheus HTTP API responses (/api/v1/query and /api/v1/query_range) into samples
// the analysis reads. Pure parsing: the HTTP side lives elsewhere and hands over the status code
// and the body.
//
// The envelope (prometheus.io/docs/prometheus/latest/querying/api):
//   {"status": "success" | "error", "data": {"resultType": ..., "result": ...},
//    "errorType": ..., "error": ..., "warnings": [...]}
// Values are strings: "1.5", "NaN", "+Inf", "-Inf". NaN and Inf are kept as such (the analysis
// makes them inconclusive); a missing series is an empty result, not an error.
//
// Errors are classified by what the controller should do:
//   bad_data, execution (HTTP 400, 422): the query itself is wrong -> InvalidArgument
//   timeout (503)                      : DeadlineExceeded (retry next interval)
//   canceled, unavailable, internal, anything else, non-JSON bodies (a proxy's 502 page)
//                                      : Unavailable (retry next interval)
//   a success envelope of the wrong shape: Corruption
// Every message starts with "prometheus".
//
// Thread-safety: all functions are pure.
#ifndef CUTOVER_CANARY_PROMETHEUS_H_
#define CUTOVER_CANARY_PROMETHEUS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cutover::canary {

enum class PromResultType { kVector, kMatrix, kScalar, kString };

struct PromSample {
  double time = 0;   // unix seconds
  double value = 0;  // may be NaN or +-Inf
};

struct PromSeries {
  std::map<std::string, std::string> labels;
  std::vector<PromSample> samples;  // one for vector and scalar results
};

struct PromResult {
  PromResultType type = PromResultType::kVector;
  std::vector<PromSeries> series;  // scalar: one series without labels; string: none
  std::string string_value;        // kString only
  std::vector<std::string> warnings;
};

// Parses one response. `http_status` is the HTTP code it came with (0 when unknown).
Result<PromResult> ParsePromResponse(std::string_view body, int http_status);

// Parses a sample value as Prometheus writes it: a decimal float, "NaN", "+Inf" or "-Inf".
Result<double> ParsePromValue(std::string_view text);

// The one series of a result as analysis samples, in the order returned (Prometheus returns
// them in time order); empty when the result has no series (the check is then inconclusive).
// InvalidArgument when there are several series (the query must aggregate them: taking one
// would hide the others) or for a string.
Result<std::vector<double>> SingleSeriesValues(const PromResult& result);

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_PROMETHEUS_H_
