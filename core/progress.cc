#include "core/progress.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/cli.h"
#include "core/posix_io.h"
#include "core/units.h"

namespace cutover {
namespace {

constexpr auto kRateWindow = std::chrono::seconds(10);
constexpr auto kMinRateWindow = std::chrono::seconds(1);
constexpr auto kMaxTimerPeriod = std::chrono::milliseconds(250);

void WriteStderr(std::string_view text) {
  // Nothing sensible to do when stderr is gone: the error is dropped.
  (void)WriteFull(STDERR_FILENO, text.data(), text.size());
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string Line(const nlohmann::ordered_json& event) {
  try {
    return event.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  } catch (const std::exception&) {
    return "{\"event\":\"error\"}\n";  // not reachable with the replace handler
  }
}

std::chrono::milliseconds Millis(double seconds) {
  // An ETA at a near-zero rate can be astronomically large: cap it at about 30 years.
  if (!(seconds < 1e9)) seconds = 1e9;
  if (!(seconds > 0)) seconds = 0;
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
}

}  // namespace

Result<ProgressOptions> ProgressOptionsFor(const GlobalOptions& g, bool stderr_is_tty) {
  ProgressOptions o;
  const std::string& p = g.progress;
  if (p == "json") {
    o.mode = ProgressMode::kJson;
  } else if (p == "bar") {
    o.mode = ProgressMode::kBar;
  } else if (p == "plain") {
    o.mode = ProgressMode::kLines;
  } else if (p == "none") {
    o.mode = ProgressMode::kNone;
  } else if (p.empty() || p == "auto") {
    o.mode = stderr_is_tty ? ProgressMode::kBar : ProgressMode::kLines;
  } else {
    return Status::InvalidArgument("bad --progress value '" + p +
                                   "' (use auto, bar, plain, json, none)");
  }
  if (g.quiet) o.mode = ProgressMode::kNone;
  return o;
}

Result<ProgressOptions> ProgressOptionsFromGlobal(const GlobalOptions& g) {
  const char* term = std::getenv("TERM");
  bool tty = ::isatty(STDERR_FILENO) == 1 && !(term != nullptr && std::strcmp(term, "dumb") == 0);
  return ProgressOptionsFor(g, tty);
}

Progress::Progress(ProgressOptions options, std::string task, uint64_t total, std::string unit)
    : options_(std::move(options)), task_(std::move(task)), unit_(std::move(unit)), total_(total) {
  std::lock_guard<std::mutex> l(mu_);
  start_ = Now();
  last_render_ = start_;
  samples_.emplace_back(start_, 0);
  if (options_.mode == ProgressMode::kJson) {
    nlohmann::ordered_json e = {
        {"event", "start"}, {"task", task_}, {"total", total}, {"unit", unit_}};
    Emit(Line(e));
  }
}

Progress::~Progress() { Finish(); }

Progress::Clock::time_point Progress::Now() const {
  return options_.clock ? options_.clock() : Clock::now();
}

std::chrono::milliseconds Progress::Interval() const {
  switch (options_.mode) {
    case ProgressMode::kBar:
      return options_.bar_interval;
    case ProgressMode::kLines:
      return options_.line_interval;
    case ProgressMode::kJson:
      return options_.json_interval;
    case ProgressMode::kNone:
      break;
  }
  return std::chrono::milliseconds(1000);
}

void Progress::Emit(std::string_view text) {
  if (options_.sink) {
    options_.sink(text);
  } else {
    WriteStderr(text);
  }
}

std::string Progress::Amount(uint64_t n) const {
  if (unit_ == "bytes") return FormatBytes(n);
  return std::to_string(n) + " " + unit_;
}

std::string Progress::Rate(double r) const {
  if (unit_ == "bytes") return FormatRate(r);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %s/s", std::isfinite(r) ? r : 0.0, unit_.c_str());
  return buf;
}

Progress::Snapshot Progress::Take(Clock::time_point now) {
  Snapshot s;
  s.done = done();
  s.total = total_.load(std::memory_order_relaxed);
  s.elapsed_s = Seconds(now - start_);
  samples_.emplace_back(now, s.done);
  while (samples_.size() > 2 && samples_[1].first <= now - kRateWindow) samples_.pop_front();
  auto [t0, d0] = samples_.front();
  if (now - t0 >= kMinRateWindow) {
    s.rate = static_cast<double>(s.done - std::min(d0, s.done)) / Seconds(now - t0);
  } else {
    s.rate = s.elapsed_s > 0 ? static_cast<double>(s.done) / s.elapsed_s : 0;
  }
  if (s.total > 0 && s.done >= s.total) {
    s.eta_s = 0;
  } else if (s.total > 0 && s.rate > 0) {
    s.eta_s = static_cast<double>(s.total - s.done) / s.rate;
  } else {
    s.eta_s = -1;
  }
  return s;
}

void Progress::Render(const Snapshot& s) {
  switch (options_.mode) {
    case ProgressMode::kNone:
      return;
    case ProgressMode::kJson: {
      nlohmann::ordered_json e = {{"event", "progress"}, {"task", task_}, {"done", s.done},
                                  {"total", s.total},    {"unit", unit_}, {"rate", s.rate}};
      e["eta_s"] = s.eta_s >= 0 ? nlohmann::ordered_json(s.eta_s) : nlohmann::ordered_json();
      if (!note_.empty()) e["note"] = note_;
      Emit(Line(e));
      return;
    }
    case ProgressMode::kLines: {
      std::string line = task_ + ": " + Amount(s.done);
      if (s.total > 0) {
        int pct = static_cast<int>(std::min<uint64_t>(100, s.done * 100 / s.total));
        line += " / " + Amount(s.total) + " (" + std::to_string(pct) + "%)";
      }
      line += ", " + Rate(s.rate);
      if (s.eta_s >= 0) line += ", ETA " + FormatDuration(Millis(s.eta_s));
      if (!note_.empty()) line += "; " + note_;
      Emit(line + "\n");
      return;
    }
    case ProgressMode::kBar: {
      std::string line = "\r" + task_ + " ";
      if (s.total > 0) {
        double frac = std::min(1.0, static_cast<double>(s.done) / static_cast<double>(s.total));
        int width = std::max(1, options_.bar_width);
        int filled = static_cast<int>(frac * width);
        char pct[8];
        std::snprintf(pct, sizeof pct, "%3d%%", static_cast<int>(frac * 100));
        line += "[" + std::string(filled, '#') + std::string(width - filled, '-') + "] " + pct +
                " " + Amount(s.done) + "/" + Amount(s.total);
      } else {
        line += Amount(s.done);
      }
      line += " " + Rate(s.rate);
      if (s.eta_s >= 0) line += " ETA " + FormatDuration(Millis(s.eta_s));
      if (!note_.empty()) line += " " + note_;
      Emit(line + "\x1b[K");  // erase what a longer previous line left
      return;
    }
  }
}

void Progress::SetNote(std::string note) {
  std::lock_guard<std::mutex> l(mu_);
  note_ = std::move(note);
}

void Progress::Tick() {
  if (options_.mode == ProgressMode::kNone) return;
  std::lock_guard<std::mutex> l(mu_);
  if (finished_) return;
  Clock::time_point now = Now();
  bool due =
      (options_.mode == ProgressMode::kBar && !rendered_) || now - last_render_ >= Interval();
  if (!due) return;
  Render(Take(now));
  rendered_ = true;
  last_render_ = now;
}

void Progress::StartTimer() {
  if (options_.mode == ProgressMode::kNone || timer_.joinable()) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (finished_) return;
  }
  auto period = std::min<std::chrono::milliseconds>(Interval(), kMaxTimerPeriod);
  timer_ = std::thread([this, period] {
    std::unique_lock<std::mutex> l(timer_mu_);
    while (!stop_) {
      if (timer_cv_.wait_for(l, period, [this] { return stop_; })) break;
      l.unlock();
      Tick();
      l.lock();
    }
  });
}

void Progress::Finish(const Status& outcome) {
  {
    std::lock_guard<std::mutex> l(timer_mu_);
    stop_ = true;
  }
  timer_cv_.notify_all();
  if (timer_.joinable()) timer_.join();

  std::lock_guard<std::mutex> l(mu_);
  if (finished_) return;
  finished_ = true;
  if (options_.mode == ProgressMode::kNone) return;
  Clock::time_point now = Now();
  Snapshot s = Take(now);
  double avg = s.elapsed_s > 0 ? static_cast<double>(s.done) / s.elapsed_s : 0;
  switch (options_.mode) {
    case ProgressMode::kNone:
      return;
    case ProgressMode::kBar:
      Render(s);
      Emit("\n");
      return;
    case ProgressMode::kLines: {
      std::string elapsed = FormatDuration(Millis(s.elapsed_s));
      if (outcome.ok()) {
        Emit(task_ + ": done, " + Amount(s.done) + " in " + elapsed + " (" + Rate(avg) + ")\n");
      } else {
        Emit(task_ + ": failed after " + elapsed + " at " + Amount(s.done) + ": " +
             outcome.message() + "\n");
      }
      return;
    }
    case ProgressMode::kJson: {
      nlohmann::ordered_json e = {{"event", "end"}, {"task", task_},
                                  {"done", s.done}, {"total", s.total},
                                  {"unit", unit_},  {"elapsed_s", s.elapsed_s},
                                  {"rate", avg},    {"ok", outcome.ok()}};
      if (!outcome.ok()) e["error"] = outcome.message();
      Emit(Line(e));
      return;
    }
  }
}

}  // namespace cutover
