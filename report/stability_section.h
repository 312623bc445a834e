// The report's stability section: how steadily each compat case ran on each side (CV, p99/p50,
// longest run of slow repetitions; compat/stability.h), the verdict per case and overall, and the
// likely cause of a noisier target. Cases with under 30 repetitions a side are "not assessed".
//
// Thread-safety: pure functions.
#ifndef CUTOVER_REPORT_STABILITY_SECTION_H_
#define CUTOVER_REPORT_STABILITY_SECTION_H_

#include <string>

#include <nlohmann/json.hpp>

#include "report/assess.h"

namespace cutover::report {

// The "stability" object of the report's compat section.
nlohmann::json StabilityJson(const Assessment& a);
std::string StabilityMarkdown(const Assessment& a);
// A section with a chart of each assessed case's CV on both sides, and the table.
std::string StabilityHtml(const Assessment& a);

}  // namespace cutover::report

#endif  // CUTOVER_REPORT_STABILITY_SECTION_H_
