// Fuzzes the assessment's reading of the documents it embeds (a datasync plan and a canary
// history, JSON from other tools or hand-edited): whatever fields they hold, with any types,
// judging and every rendering finish without a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/json.h"
#include "report/assess.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = cutover::ParseJson(text, "fuzz");
  if (!doc.ok() || !doc->is_object()) return 0;
  for (const char* schema : {"cutover.datasync-plan/1", "cutover.rollout-history/1"}) {
    cutover::report::AssessInputs in;
    nlohmann::json d = *doc;
    d["schema"] = schema;
    (std::string(schema).find("datasync") != std::string::npos ? in.datasync_plan
                                                                : in.canary_history) = d;
    auto a = cutover::report::Assess(std::move(in));
    FUZZ_CHECK(a.ok(), a.status().message());
    FUZZ_CHECK(!cutover::report::RenderHtml(*a).empty(), "");
    FUZZ_CHECK(!cutover::report::RenderMarkdown(*a).empty(), "");
    (void)cutover::DumpJson(cutover::report::AssessmentToJson(*a));
    (void)cutover::report::AssessmentJunit(*a).ToXml();
  }
  return 0;
}
