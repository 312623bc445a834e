// Running a list of cases into a record file, one case at a time, so that a long run survives
// being killed: after each finished case the whole record is rewritten atomically (temporary
// name, fsync, rename; core/file_util.h), so the file on disk always holds every case finished
// so far. With `resume`, an existing record of the same backend, suite, accumulate mode, thread
// count and op-table version is read first, the cases it holds are kept as they are and skipped,
// and the rest are appended in list order: a run killed at any point loses at most the case in
// flight.
//
// Failpoint: "compat.run.case_saved" after each case's record write (crash tests).
//
// Thread-safety: one call at a time per record path (the file is the run's only state).
#ifndef CUTOVER_COMPAT_SUITE_RUN_H_
#define CUTOVER_COMPAT_SUITE_RUN_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compat/op.h"
#include "compat/record.h"
#include "compat/runner.h"
#include "core/status.h"

namespace cutover {

struct SuiteRunOptions {
  std::string record_path;
  bool resume = false;  // keep the cases an existing record at record_path holds
  // The record's header (backend, suite, accumulate, threads, build_type, calibration,
  // created_at, cutover_version, fingerprint); its cases are ignored. On resume the existing
  // record's header is kept.
  CompatRecord header;
  std::vector<CaseSpec> cases;
  RunConfig config;
  // Runs one case; empty: RunCpuCase with `config` (compat/runner.h). The cuda backend passes
  // RunDeviceCase (compat/device_runner.h) bound to its plugin.
  std::function<CaseResult(const OpDescriptor&, const CaseSpec&)> run_case;
};

struct SuiteRunResult {
  CompatRecord record;  // as last written to record_path
  size_t kept = 0;      // cases taken from the existing record
  size_t ran = 0;       // cases run now
};

// FailedPrecondition when `held` (the record at `path`) cannot be resumed by a run with `want`'s
// header: "compat run --resume: PATH was made with backend cuda, this run uses cpu (use the same
// options or another --record)"; likewise for suite, accumulate, threads and op_table_version.
Status CheckResumable(const CompatRecord& held, const CompatRecord& want, const std::string& path);

// The calibration a resumed run keeps: the existing record's at `record_path` when `resume` is set
// and it holds a measured one (its fractions of ceiling then stay on one yardstick), else
// nullopt (the run calibrates). A record that cannot be read is left to RunSuiteToRecord to
// refuse.
std::optional<Calibration> HeldCalibration(const std::string& record_path, bool resume);

// Runs every case of `opts.cases` the record does not hold yet (all of them without resume or
// when record_path does not exist) and writes the record after each one. Each case run (by
// run_case or the cpu runner) gets its timing.fraction_of_ceiling from the record's calibration
// (the held record's on resume). `on_case` (may be empty) is called once per case of the list,
// kept or run. Errors: a record that cannot be read or resumed (InvalidArgument /
// FailedPrecondition, exit 2), a write failure (IoError).
// REQUIRES: every case names a registered op.
Result<SuiteRunResult> RunSuiteToRecord(const SuiteRunOptions& opts,
                                        const std::function<void()>& on_case);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_SUITE_RUN_H_
