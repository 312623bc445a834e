// `compat run --soak DURATION`: the suite (or --ops) repeated round after round for the whole
// duration, so that interference that comes and goes is seen. Each case's repetitions are spread
// over the period: every round times each case `reps_per_round` times, and rounds start on a
// fixed schedule (start + k * interval, idle between them when the suite is quicker than the
// interval), where interval = max(the measured round time, duration / kSoakTargetRounds). Beside
// each case's timed repetitions the soak samples what the host did (compat/interference.h).
//
// The cpu backend keeps every case's inputs in memory for the whole soak (prepared once in round
// 0, which also records the outputs, digests and samples as a normal run does), so a round costs
// the timed repetitions and little else; another backend (cuda) runs each round through its
// run_case with reps_per_round repetitions (its warm-up and input upload then count as soak
// overhead).
//
// The record is written after round 0, then at most every kSoakSaveSeconds and at the end.
//
// Thread-safety: one soak at a time per record path.
#ifndef CUTOVER_COMPAT_SOAK_H_
#define CUTOVER_COMPAT_SOAK_H_

#include <chrono>
#include <functional>
#include <string>

#include "compat/gpu_monitor.h"
#include "compat/interference.h"
#include "compat/suite_run.h"
#include "core/status.h"

namespace cutover {

inline constexpr int kSoakTargetRounds = 100;
inline constexpr double kSoakSaveSeconds = 30;

struct SoakOptions {
  SuiteRunOptions run;  // record_path, header, cases, config, run_case (resume is refused)
  std::chrono::milliseconds duration{0};
  int reps_per_round = 5;
  const FileSystem* fs = nullptr;  // for the interference samples; null: none sampled
  // The device's NVML (cuda backend), sampled on a thread during each case's repetitions of
  // rounds 1 and later (compat/gpu_monitor.h); null: the GPU is not sampled.
  GpuMonitor* gpu = nullptr;
};

// What a round reports to the progress display.
struct SoakRound {
  int round = 0;    // 0-based
  int planned = 0;  // the planned number of rounds (from round 1's time)
  double elapsed_s = 0;
  double median_cv = 0;  // over the cases, of all their repetitions so far
  double worst_cv = 0;
  std::string worst_case;
};

struct SoakResult {
  CompatRecord record;
  int rounds = 0;         // round 0 included
  double wall_s = 0;      // the soak's whole wall time
  double prepare_s = 0;   // round 0: an ordinary compat run of the cases, and the record's write
  double timed_s = 0;     // the sum of the timed repetitions of rounds 1 and later
  double idle_s = 0;      // the planned idle between rounds
  double interval_s = 0;  // the rounds' schedule
  // What soaking itself cost after round 0 (sampling, bookkeeping, record writes, oversleep):
  // wall - prepare - timed - idle.
  double OverheadS() const { return wall_s - prepare_s - timed_s - idle_s; }
};

// Runs the soak. InvalidArgument for a duration under one second or opts.run.resume; IoError
// when the record cannot be written. `on_round` (may be empty) is called after every round.
// REQUIRES: every case names a registered op.
Result<SoakResult> RunSoak(const SoakOptions& opts,
                           const std::function<void(const SoakRound&)>& on_round);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_SOAK_H_
