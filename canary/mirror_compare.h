// Response comparison for `cutover canary mirror`: one request's answers from the primary, a
// second primary (the secondary) and the candidate are flattened into fields and compared field by
// field; an aggregator counts, per field, how often the two primaries differ (noise) and how often
// the candidate differs from the primary, and judges each field by the candidate's excess over the
// noise. Pure code: no network, no clock.
//
// Fields. When both bodies of a pair parse as JSON, each leaf is a field named by its path:
// `choices[0].text`, `usage.total_tokens`, `["a key.with dots"]` (keys of letters, digits, '_' and
// '-' are written bare, others as a quoted JSON string in brackets), `<value>` for a scalar
// document. Empty objects and arrays are leaves too, so `{}` and `[]` differ. Otherwise the body
// is one field, `<body>`, compared byte for byte. The status code is always the field `<status>`.
//
// Equality. Two numbers are equal when |a-b| <= abs_tol + rel_tol*max(|a|,|b|), except that two
// integer tokens (no fraction, no exponent) must be equal exactly: counts and ids do not drift.
// Strings, booleans and null are equal only when identical. A field absent on one side, or of
// another JSON type, differs.
//
// Judging a field over many requests: noise rate = primary-vs-secondary differences /
// comparisons, candidate rate = primary-vs-candidate differences / comparisons, excess rate =
// max(0, candidate rate - noise rate). A field whose noise rate is above `noisy_rate` is `noisy`
// (two primaries disagree on it, so it says nothing about the candidate) and never fails the run;
// else it `differs` when its excess rate is above `max_diff_rate`. A run with nothing compared is
// `inconclusive`.
//
// Thread-safety: the free functions are thread-safe. A MirrorAggregator is not: callers that
// share one serialise Add and Summarize.
#ifndef CUTOVER_CANARY_MIRROR_COMPARE_H_
#define CUTOVER_CANARY_MIRROR_COMPARE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace cutover::canary {

// The field names that are not JSON paths.
inline constexpr char kStatusField[] = "<status>";
inline constexpr char kBodyField[] = "<body>";
inline constexpr char kValueField[] = "<value>";

struct MirrorCompareOptions {
  double rel_tol = 1e-3;
  double abs_tol = 1e-6;
  // Fields left out of every comparison. A pattern names a field and everything under it;
  // `[*]` matches any array index (`choices[*].logprobs`).
  std::vector<std::string> ignore;
  double max_diff_rate = 0.01;  // a field fails when its excess rate is above this
  double noisy_rate = 0.2;      // a field is noisy when its noise rate is above this
  // Distinct fields tracked by an aggregator; observations of further fields are only counted.
  size_t max_fields = 10000;
};

// InvalidArgument naming the flag when an option is out of range, e.g.
//   "mirror: --rel-tol must be a finite number >= 0, got -1"
//   "mirror: --max-diff-rate must be between 0 and 1, got 1.5"
//   "mirror: --ignore needs a field path, got ''"
Status ValidateMirrorCompareOptions(const MirrorCompareOptions& options);

// True when ignore pattern `pattern` covers field `path` (see MirrorCompareOptions::ignore).
bool IgnorePatternMatches(std::string_view pattern, std::string_view path);

// One upstream's answer as far as comparison goes.
struct MirrorResponse {
  int status = 0;
  std::string body;
};

// A response taken apart into fields (see the header comment). Refers to the response's body,
// which must outlive it.
struct FlatResponse {
  int status = 0;
  bool is_json = false;
  std::string_view body;
  // When is_json: the leaves, sorted by path, paths unique.
  std::vector<std::pair<std::string, nlohmann::json>> fields;
};
FlatResponse FlattenResponse(const MirrorResponse& response);

// How one field of a pair compared.
struct FieldComparison {
  std::string path;
  bool differs = false;
  // Both sides numbers: |a-b| / max(|a|,|b|) (0 when both are 0); otherwise unset.
  std::optional<double> rel_diff;
};

// Every field present on either side (ignored fields left out), in path order; `<status>` first.
std::vector<FieldComparison> CompareFlat(const FlatResponse& a, const FlatResponse& b,
                                         const MirrorCompareOptions& options);
std::vector<FieldComparison> CompareResponses(const MirrorResponse& a, const MirrorResponse& b,
                                              const MirrorCompareOptions& options);

enum class FieldVerdict { kOk, kDiffers, kNoisy };
std::string_view FieldVerdictName(FieldVerdict v);  // "ok", "differs", "noisy"

struct MirrorFieldResult {
  std::string path;
  int64_t comparisons = 0;             // requests in which any of the three answers had the field
  int64_t noise_diffs = 0;             // primary vs secondary
  int64_t candidate_diffs = 0;         // primary vs candidate
  std::optional<double> max_rel_diff;  // largest numeric primary-vs-candidate relative difference
  double noise_rate = 0;
  double candidate_rate = 0;
  double excess_rate = 0;
  FieldVerdict verdict = FieldVerdict::kOk;
};

enum class MirrorVerdict { kPass, kFail, kInconclusive };
std::string_view MirrorVerdictName(MirrorVerdict v);  // "pass", "fail", "inconclusive"

struct MirrorSummary {
  int64_t compared = 0;  // request triples compared
  // Every tracked field: those that differ first, then noisy ones, then the rest; within each by
  // excess rate (noisy: noise rate), highest first, then by path.
  std::vector<MirrorFieldResult> fields;
  int64_t untracked_observations = 0;  // field observations beyond max_fields
  int64_t failing_fields = 0;
  int64_t noisy_fields = 0;
  MirrorVerdict verdict = MirrorVerdict::kInconclusive;
};

class MirrorAggregator {
 public:
  explicit MirrorAggregator(MirrorCompareOptions options);

  // Compares one request's three answers and counts the outcome per field.
  void Add(const MirrorResponse& primary, const MirrorResponse& secondary,
           const MirrorResponse& candidate);

  int64_t compared() const { return compared_; }
  size_t tracked_fields() const { return fields_.size(); }
  MirrorSummary Summarize() const;

 private:
  struct Counts {
    int64_t comparisons = 0;
    int64_t noise_diffs = 0;
    int64_t candidate_diffs = 0;
    std::optional<double> max_rel_diff;
  };
  MirrorCompareOptions options_;
  std::map<std::string, Counts, std::less<>> fields_;
  int64_t compared_ = 0;
  int64_t untracked_ = 0;
};

// What the proxy saw of the traffic, for the report.
struct MirrorTraffic {
  int64_t received = 0;        // client requests answered
  int64_t not_mirrored = 0;    // their method is not mirrored: proxied only
  int64_t mirrored = 0;        // copies sent on to the secondary and the candidate
  int64_t dropped = 0;         // copies dropped: queue full, or still queued at the end
  int64_t primary_errors = 0;  // the primary did not answer: the client got a 502
  int64_t copy_errors = 0;     // the secondary or the candidate did not answer a copy
  int64_t compared = 0;        // triples compared
  int64_t too_large = 0;       // not compared: an answer's body passed --max-body
};

struct MirrorRunInfo {
  std::string primary, secondary, candidate;  // URLs, credentials redacted
  std::vector<std::string> methods;
  uint64_t max_body = 0;                // bytes of an answer kept to compare (--max-body)
  std::string started_at, finished_at;  // RFC 3339
  MirrorTraffic traffic;
};

// The report document, schema "cutover.mirror-report/1" (docs/schemas/mirror-report-1.json).
// Bump the version on an incompatible change.
nlohmann::json MirrorReportJson(const MirrorRunInfo& run, const MirrorCompareOptions& options,
                                const MirrorSummary& summary);
// The same for people: traffic counts, then the fields that differ or are noisy (at most
// `max_rows`), then the verdict.
std::string MirrorReportTable(const MirrorRunInfo& run, const MirrorSummary& summary,
                              size_t max_rows = 20);

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_MIRROR_COMPARE_H_
