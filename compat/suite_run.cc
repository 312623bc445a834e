#include "compat/suite_run.h"

#include <set>

#include "core/failpoint.h"

namespace cutover {
namespace {

Status Mismatch(const std::string& path, const std::string& what, const std::string& held,
                const std::string& want) {
  return Status::FailedPrecondition("compat run --resume: " + path + " was made with " + what +
                                    " " + held + ", this run uses " + want +
                                    " (use the same options or another --record)");
}

}  // namespace

Status CheckResumable(const CompatRecord& held, const CompatRecord& want, const std::string& path) {
  if (held.op_table_version != want.op_table_version) {
    return Mismatch(path, "op table version", std::to_string(held.op_table_version),
                    std::to_string(want.op_table_version));
  }
  if (held.backend != want.backend) return Mismatch(path, "backend", held.backend, want.backend);
  if (held.suite != want.suite) return Mismatch(path, "suite", held.suite, want.suite);
  if (held.accumulate != want.accumulate) {
    return Mismatch(path, "accumulate", held.accumulate, want.accumulate);
  }
  if (held.threads != want.threads) {
    return Mismatch(path, "threads", std::to_string(held.threads), std::to_string(want.threads));
  }
  return Status::Ok();
}

std::optional<Calibration> HeldCalibration(const std::string& record_path, bool resume) {
  if (!resume) return std::nullopt;
  Result<CompatRecord> held = LoadRecord(record_path);
  if (!held.ok() || !held->calibration.measured) return std::nullopt;
  return held->calibration;
}

Result<SuiteRunResult> RunSuiteToRecord(const SuiteRunOptions& opts,
                                        const std::function<void()>& on_case) {
  SuiteRunResult out;
  out.record = opts.header;
  out.record.cases.clear();
  if (opts.resume) {
    Result<CompatRecord> held = LoadRecord(opts.record_path);
    if (held.ok()) {
      CUTOVER_RETURN_IF_ERROR(CheckResumable(*held, opts.header, opts.record_path));
      out.record = std::move(*held);
    } else if (held.status().code() != Code::kNotFound) {
      return held.status();
    }
  }
  std::set<std::string> have;
  for (const CaseResult& r : out.record.cases) have.insert(r.id);
  for (const CaseSpec& c : opts.cases) {
    if (have.count(c.Id())) {
      ++out.kept;
    } else {
      const OpDescriptor& op = *FindOp(c.op);
      out.record.cases.push_back(opts.run_case ? opts.run_case(op, c)
                                               : RunCpuCase(op, c, opts.config));
      CaseTiming& t = out.record.cases.back().timing;
      t.fraction_of_ceiling = FractionOfCeiling(out.record.calibration, t, c.dtype);
      have.insert(c.Id());
      ++out.ran;
      CUTOVER_RETURN_IF_ERROR(SaveRecord(opts.record_path, out.record));
      CUTOVER_FAILPOINT_RETURN("compat.run.case_saved");
    }
    if (on_case) on_case();
  }
  // Also when nothing was left to run: the file then exists and names this run's header.
  if (out.ran == 0) CUTOVER_RETURN_IF_ERROR(SaveRecord(opts.record_path, out.record));
  return out;
}

}  // namespace cutover
