// Small helpers shared by the report renderers (assess.cc, html.cc): safe reads of optional
// fields of outside documents (a wrong type reads as absent, never throws) and number formatting.
#ifndef CUTOVER_REPORT_RENDER_UTIL_H_
#define CUTOVER_REPORT_RENDER_UTIL_H_

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cutover::report {

// doc[key] when doc is an object and that is a string, else `fallback`.
inline std::string StrAt(const nlohmann::json& doc, const char* key,
                         const std::string& fallback = "") {
  if (!doc.is_object()) return fallback;
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// doc[key] when doc is an object and that is a number, else `fallback`.
inline double NumAt(const nlohmann::json& doc, const char* key, double fallback = 0) {
  if (!doc.is_object()) return fallback;
  auto it = doc.find(key);
  return it != doc.end() && it->is_number() ? it->get<double>() : fallback;
}

// `v` with `digits` significant digits ("%.*g").
inline std::string Num(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

// The lines that summarise a cutover.datasync-plan/1 document (files, bytes after dedup, time).
std::vector<std::string> DatasyncSummary(const nlohmann::json& plan);

}  // namespace cutover::report

#endif  // CUTOVER_REPORT_RENDER_UTIL_H_
