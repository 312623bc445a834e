#include "canary/prometheus.h"

#include <charconv>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace cutover::canary {
namespace {

using nlohmann::json;

Status Malformed(const std::string& what) {
  return Status::Corruption("prometheus: malformed response: " + what);
}

std::string HttpNote(int http_status) {
  return http_status > 0 ? " (HTTP " + std::to_string(http_status) + ")" : "";
}

// [<unix time>, "<value>"] -> sample.
Result<PromSample> ParsePair(const json& pair, const std::string& where) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_string()) {
    return Malformed(where + " is not [<time>, \"<value>\"]");
  }
  PromSample s;
  s.time = pair[0].get<double>();
  Result<double> v = ParsePromValue(pair[1].get_ref<const std::string&>());
  if (!v.ok()) return Malformed(where + ": " + v.status().message());
  s.value = *v;
  return s;
}

Result<std::map<std::string, std::string>> ParseLabels(const json& metric,
                                                       const std::string& where) {
  std::map<std::string, std::string> labels;
  if (!metric.is_object()) return Malformed(where + ".metric is not an object");
  for (const auto& [k, v] : metric.items()) {
    if (!v.is_string()) return Malformed(where + ".metric." + k + " is not a string");
    labels[k] = v.get<std::string>();
  }
  return labels;
}

Status ClassifyError(const json& doc, int http_status) {
  std::string type = doc.contains("errorType") && doc["errorType"].is_string()
                         ? doc["errorType"].get<std::string>()
                         : "unknown";
  std::string error = doc.contains("error") && doc["error"].is_string()
                          ? doc["error"].get<std::string>()
                          : "(no message)";
  std::string msg = "prometheus " + type + HttpNote(http_status) + ": " + error;
  if (type == "bad_data" || type == "execution") return Status::InvalidArgument(msg);
  if (type == "timeout") return Status::DeadlineExceeded(msg);
  return Status::Unavailable(msg);
}

}  // namespace

Result<double> ParsePromValue(std::string_view text) {
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "+Inf" || text == "Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v)) {
    return Status::InvalidArgument("bad sample value \"" + std::string(text) + "\"");
  }
  return v;
}

Result<PromResult> ParsePromResponse(std::string_view body, int http_status) {
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    std::string msg = "prometheus answered" + HttpNote(http_status) + " with a non-JSON body";
    if (http_status >= 200 && http_status < 300) return Malformed("not a JSON object");
    return Status::Unavailable(msg);
  }
  const std::string status =
      doc.contains("status") && doc["status"].is_string() ? doc["status"].get<std::string>() : "";
  if (status == "error") return ClassifyError(doc, http_status);
  if (status != "success") return Malformed("status is neither success nor error");
  if (http_status != 0 && (http_status < 200 || http_status >= 300)) {
    return Status::Unavailable("prometheus answered HTTP " + std::to_string(http_status) +
                               " with a success body");
  }
  PromResult out;
  if (doc.contains("warnings")) {
    if (!doc["warnings"].is_array()) return Malformed("warnings is not a list");
    for (const json& w : doc["warnings"]) {
      if (w.is_string()) out.warnings.push_back(w.get<std::string>());
    }
  }
  if (!doc.contains("data") || !doc["data"].is_object()) return Malformed("no data object");
  const json& data = doc["data"];
  if (!data.contains("resultType") || !data["resultType"].is_string() || !data.contains("result")) {
    return Malformed("data lacks resultType or result");
  }
  const std::string type = data["resultType"].get<std::string>();
  const json& result = data["result"];
  if (type == "scalar" || type == "string") {
    if (!result.is_array() || result.size() != 2 || !result[0].is_number() ||
        !result[1].is_string()) {
      return Malformed("data.result is not [<time>, \"<value>\"]");
    }
    if (type == "string") {
      out.type = PromResultType::kString;
      out.string_value = result[1].get<std::string>();
      return out;
    }
    out.type = PromResultType::kScalar;
    PromSeries s;
    CUTOVER_ASSIGN_OR_RETURN(PromSample sample, ParsePair(result, "data.result"));
    s.samples.push_back(sample);
    out.series.push_back(std::move(s));
    return out;
  }
  if (type != "vector" && type != "matrix") return Malformed("unknown resultType " + type);
  if (!result.is_array()) return Malformed("data.result is not a list");
  out.type = type == "vector" ? PromResultType::kVector : PromResultType::kMatrix;
  for (size_t i = 0; i < result.size(); ++i) {
    const std::string where = "data.result[" + std::to_string(i) + "]";
    const json& e = result[i];
    if (!e.is_object()) return Malformed(where + " is not an object");
    if (e.contains("histogram") || e.contains("histograms")) {
      return Status::InvalidArgument("prometheus: " + where +
                                     " holds native histogram samples; query a float "
                                     "(e.g. histogram_quantile) instead");
    }
    PromSeries s;
    if (e.contains("metric")) {
      CUTOVER_ASSIGN_OR_RETURN(s.labels, ParseLabels(e["metric"], where));
    }
    if (out.type == PromResultType::kVector) {
      if (!e.contains("value")) return Malformed(where + " has no value");
      CUTOVER_ASSIGN_OR_RETURN(PromSample sample, ParsePair(e["value"], where + ".value"));
      s.samples.push_back(sample);
    } else {
      if (!e.contains("values") || !e["values"].is_array()) {
        return Malformed(where + " has no values list");
      }
      const json& values = e["values"];
      for (size_t j = 0; j < values.size(); ++j) {
        CUTOVER_ASSIGN_OR_RETURN(
            PromSample sample, ParsePair(values[j], where + ".values[" + std::to_string(j) + "]"));
        s.samples.push_back(sample);
      }
    }
    out.series.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<double>> SingleSeriesValues(const PromResult& result) {
  if (result.type == PromResultType::kString) {
    return Status::InvalidArgument("prometheus: the query returned a string, not numbers");
  }
  if (result.series.size() > 1) {
    return Status::InvalidArgument("prometheus: the query returned " +
                                   std::to_string(result.series.size()) +
                                   " series; aggregate them to one (for example sum(...))");
  }
  std::vector<double> values;
  if (result.series.empty()) return values;
  for (const PromSample& s : result.series.front().samples) values.push_back(s.value);
  return values;
}

}  // namespace cutover::canary
