// Progress reporting for long operations (transfers, compat runs, fleet probes), on stderr only:
// stdout carries results.
//
// Modes, chosen from the global options by ProgressOptionsFor:
//   kBar    stderr is a terminal: one line redrawn with '\r' at most 10 times a second, with
//           done/total, rate and ETA.
//   kLines  stderr is not a terminal (CI logs): a plain line every 5 s and one at the end.
//   kJson   --progress=json: one JSON object per line, events "start", "progress", "end":
//           {"event":"progress","task":"push","done":1024,"total":4096,"unit":"bytes",
//            "rate":512.0,"eta_s":6.0}   (eta_s is null while unknown)
//   kNone   --quiet: nothing.
//
//   Progress p(*ProgressOptionsFromGlobal(ctx.global), "push", total_bytes);
//   p.StartTimer();              // render from a background thread (or call Tick() yourself)
//   ... workers call p.Add(n) ...
//   p.Finish(status);
//
// The rate is measured over the last 10 s (the average since the start until 1 s has passed).
//
// Thread-safety: Add, SetTotal, done and Tick may be called from any thread concurrently (Add is
// one relaxed atomic add). Finish and the destructor must not race with each other.
#ifndef CUTOVER_CORE_PROGRESS_H_
#define CUTOVER_CORE_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "core/status.h"

namespace cutover {

struct GlobalOptions;  // core/cli.h

enum class ProgressMode { kNone, kBar, kLines, kJson };

struct ProgressOptions {
  ProgressMode mode = ProgressMode::kNone;
  std::chrono::milliseconds bar_interval{100};    // kBar: at most 10 redraws per second
  std::chrono::milliseconds line_interval{5000};  // kLines: one line per interval
  std::chrono::milliseconds json_interval{1000};  // kJson: one "progress" event per interval
  int bar_width = 30;
  // Receives each piece of output (whole lines, or a whole bar redraw). nullptr: stderr.
  std::function<void(std::string_view)> sink;
  // The time source (tests inject a fake). nullptr: std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

// The mode for `g`: --quiet gives kNone; --progress "json" kJson, "bar" kBar, "plain" kLines,
// "none" kNone; "" or "auto" kBar on a terminal, else kLines. InvalidArgument for other values:
// "bad --progress value 'x' (use auto, bar, plain, json, none)".
Result<ProgressOptions> ProgressOptionsFor(const GlobalOptions& g, bool stderr_is_tty);

// ProgressOptionsFor with whether stderr is a terminal (isatty(2)).
Result<ProgressOptions> ProgressOptionsFromGlobal(const GlobalOptions& g);

class Progress {
 public:
  // Starts the clock and emits the "start" event (kJson). `total` 0 means unknown; `unit` is
  // "bytes" (shown as KiB, MiB, ...) or a plural noun ("files", "ops") shown as is.
  Progress(ProgressOptions options, std::string task, uint64_t total, std::string unit = "bytes");
  // Finishes (as successful) if Finish was not called.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Counts `n` more units done. Cheap: safe to call per chunk from worker threads.
  void Add(uint64_t n) { done_.fetch_add(n, std::memory_order_relaxed); }
  void SetTotal(uint64_t total) { total_.store(total, std::memory_order_relaxed); }
  uint64_t done() const { return done_.load(std::memory_order_relaxed); }

  // A short text shown after the counts ("round 3/40, CV median 1.2%") and sent as "note" in
  // JSON events; "" shows none.
  void SetNote(std::string note);

  // Renders if the mode's interval has passed since the last rendering.
  void Tick();

  // Renders from a background thread until Finish. No-op in kNone or when already started.
  void StartTimer();

  // Stops the timer, renders the final state and the "end" event (with the error when `outcome`
  // is not OK); the bar ends its line. Later calls do nothing.
  void Finish(const Status& outcome = Status::Ok());

 private:
  using Clock = std::chrono::steady_clock;
  struct Snapshot {
    uint64_t done, total;
    double elapsed_s, rate;
    double eta_s;  // < 0 when unknown
  };

  Clock::time_point Now() const;
  std::chrono::milliseconds Interval() const;
  Snapshot Take(Clock::time_point now);  // REQUIRES: mu_ held
  void Render(const Snapshot& s);        // REQUIRES: mu_ held
  void Emit(std::string_view text);      // REQUIRES: mu_ held
  std::string Amount(uint64_t n) const;
  std::string Rate(double r) const;

  const ProgressOptions options_;
  const std::string task_;
  const std::string unit_;
  std::atomic<uint64_t> done_{0};
  std::atomic<uint64_t> total_;

  std::mutex mu_;
  Clock::time_point start_;
  Clock::time_point last_render_;
  bool rendered_ = false;
  bool finished_ = false;
  std::string note_;                                            // guarded by mu_
  std::deque<std::pair<Clock::time_point, uint64_t>> samples_;  // for the windowed rate

  std::mutex timer_mu_;
  std::condition_variable timer_cv_;
  bool stop_ = false;
  std::thread timer_;
};

}  // namespace cutover

#endif  // CUTOVER_CORE_PROGRESS_H_
