// Fuzzes what the mirror proxy does with upstream HTTP responses: arbitrary bytes, split at the
// first NUL into two bodies (the second gets status 200 or 500 by the input's parity), go through
// the field comparison, the aggregator and the report. No crash, and:
//   a body compared with itself has no difference;
//   comparison is symmetric (the same fields, the same verdicts, the same relative differences);
//   fields come out once each, `<status>` first, the rest sorted, relative differences in [0, 2];
//   when the secondary answers like the primary there is no noise, and when it answers like the
//   candidate the noise equals the candidate's differences;
//   with a small field cap, tracked comparisons plus untracked observations cover every field;
//   the report serialises.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "canary/mirror_compare.h"
#include "core/json.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using cutover::canary::CompareResponses;
using cutover::canary::FieldComparison;
using cutover::canary::MirrorAggregator;
using cutover::canary::MirrorCompareOptions;
using cutover::canary::MirrorResponse;
using cutover::canary::MirrorSummary;

void CheckWellFormed(const std::vector<FieldComparison>& fields) {
  std::set<std::string> seen;
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldComparison& f = fields[i];
    FUZZ_CHECK(!f.path.empty(), "an empty field path");
    FUZZ_CHECK(seen.insert(f.path).second, "field twice: " + f.path);
    FUZZ_CHECK((f.path == cutover::canary::kStatusField) == (i == 0),
               "<status> is not first: " + f.path);
    if (i >= 2) FUZZ_CHECK(fields[i - 1].path < f.path, "fields out of order at " + f.path);
    if (f.rel_diff) {
      FUZZ_CHECK(*f.rel_diff >= 0 && *f.rel_diff <= 2, "relative difference out of [0, 2]");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  MirrorResponse a{.status = 200, .body = std::string(in.substr(0, nul))};
  MirrorResponse b{
      .status = size % 2 == 0 ? 200 : 500,
      .body = nul == std::string_view::npos ? std::string() : std::string(in.substr(nul + 1))};
  MirrorCompareOptions opts;

  for (const MirrorResponse* r : {&a, &b}) {
    std::vector<FieldComparison> self = CompareResponses(*r, *r, opts);
    CheckWellFormed(self);
    for (const FieldComparison& f : self) {
      FUZZ_CHECK(!f.differs, "a body differs from itself at " + f.path);
    }
  }
  std::vector<FieldComparison> ab = CompareResponses(a, b, opts);
  std::vector<FieldComparison> ba = CompareResponses(b, a, opts);
  CheckWellFormed(ab);
  FUZZ_CHECK(ab.size() == ba.size(), "asymmetric field lists");
  for (size_t i = 0; i < ab.size(); ++i) {
    FUZZ_CHECK(ab[i].path == ba[i].path, "asymmetric paths: " + ab[i].path);
    FUZZ_CHECK(ab[i].differs == ba[i].differs, "asymmetric verdict at " + ab[i].path);
    FUZZ_CHECK(ab[i].rel_diff == ba[i].rel_diff, "asymmetric relative difference at " + ab[i].path);
  }
  // Ignoring a field takes it, and only it and what is under it, out.
  if (ab.size() >= 2) {
    opts.ignore = {ab.back().path};
    for (const FieldComparison& f : CompareResponses(a, b, opts)) {
      FUZZ_CHECK(!cutover::canary::IgnorePatternMatches(ab.back().path, f.path),
                 "an ignored field is compared: " + f.path);
    }
    opts.ignore.clear();
  }

  MirrorAggregator quiet(opts);
  quiet.Add(a, a, b);
  quiet.Add(b, b, a);
  MirrorAggregator echo(opts);
  echo.Add(a, b, b);
  MirrorSummary qs = quiet.Summarize();
  for (const auto& f : qs.fields) {
    FUZZ_CHECK(f.noise_diffs == 0, "noise between identical primaries at " + f.path);
    FUZZ_CHECK(f.candidate_diffs <= f.comparisons, "more differences than comparisons");
    FUZZ_CHECK(f.excess_rate >= 0 && f.excess_rate <= 1, "excess rate out of [0, 1]");
  }
  for (const auto& f : echo.Summarize().fields) {
    FUZZ_CHECK(f.noise_diffs == f.candidate_diffs, "noise differs from an identical candidate");
    FUZZ_CHECK(f.excess_rate == 0, "excess over identical noise at " + f.path);
  }

  opts.max_fields = 4;
  MirrorAggregator capped(opts);
  capped.Add(a, b, a);
  MirrorSummary cs = capped.Summarize();
  FUZZ_CHECK(cs.fields.size() <= 4, "more fields tracked than the cap");
  std::set<std::string> all;  // the fields of both pairs the aggregator compares
  for (const FieldComparison& f : ab) all.insert(f.path);
  for (const FieldComparison& f : CompareResponses(a, a, opts)) all.insert(f.path);
  int64_t tracked = 0;
  for (const auto& f : cs.fields) tracked += f.comparisons;
  FUZZ_CHECK(tracked + cs.untracked_observations == static_cast<int64_t>(all.size()),
             "tracked plus untracked observations do not cover the fields");

  cutover::canary::MirrorRunInfo run{.primary = "http://127.0.0.1:1"};
  std::string doc = cutover::DumpJson(cutover::canary::MirrorReportJson(run, opts, qs));
  FUZZ_CHECK(!doc.empty(), "empty report");
  (void)cutover::canary::MirrorReportTable(run, qs);
  return 0;
}
