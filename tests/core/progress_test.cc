#include "core/progress.h"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/cli.h"

namespace cutover {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Captures output and drives a fake clock.
struct Harness {
  std::mutex mu;
  std::string out;
  Clock::time_point now = Clock::time_point() + std::chrono::hours(1);

  ProgressOptions Options(ProgressMode mode) {
    ProgressOptions o;
    o.mode = mode;
    o.sink = [this](std::string_view s) {
      std::lock_guard<std::mutex> l(mu);
      out += s;
    };
    o.clock = [this] { return now; };
    return o;
  }
  void Advance(milliseconds d) { now += d; }
  std::string Take() {
    std::lock_guard<std::mutex> l(mu);
    return std::exchange(out, "");
  }
};

std::vector<nlohmann::json> JsonLines(const std::string& text) {
  std::vector<nlohmann::json> events;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    EXPECT_NE(nl, std::string::npos) << "unterminated line";
    if (nl == std::string::npos) break;
    events.push_back(nlohmann::json::parse(text.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  return events;
}

TEST(ProgressOptionsTest, ModeFromGlobalOptions) {
  GlobalOptions g;
  EXPECT_EQ(ProgressOptionsFor(g, true)->mode, ProgressMode::kBar);
  EXPECT_EQ(ProgressOptionsFor(g, false)->mode, ProgressMode::kLines);
  g.progress = "json";
  EXPECT_EQ(ProgressOptionsFor(g, true)->mode, ProgressMode::kJson);
  g.progress = "plain";
  EXPECT_EQ(ProgressOptionsFor(g, true)->mode, ProgressMode::kLines);
  g.progress = "bar";
  EXPECT_EQ(ProgressOptionsFor(g, false)->mode, ProgressMode::kBar);
  g.quiet = true;
  EXPECT_EQ(ProgressOptionsFor(g, true)->mode, ProgressMode::kNone);
  g.progress = "jsonl";
  EXPECT_EQ(ProgressOptionsFor(g, true).status().message(),
            "bad --progress value 'jsonl' (use auto, bar, plain, json, none)");
}

TEST(ProgressTest, JsonEvents) {
  Harness h;
  {
    Progress p(h.Options(ProgressMode::kJson), "push", 4000);
    p.Tick();  // not due: no event before the interval
    p.Add(1000);
    h.Advance(milliseconds(1000));
    p.Tick();
    h.Advance(milliseconds(500));
    p.Tick();  // not due
    p.Add(3000);
    h.Advance(milliseconds(500));
    p.Finish();
  }
  auto events = JsonLines(h.Take());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], nlohmann::json::parse(
                           R"({"event":"start","task":"push","total":4000,"unit":"bytes"})"));
  EXPECT_EQ(events[1], nlohmann::json::parse(R"({"event":"progress","task":"push","done":1000,
      "total":4000,"unit":"bytes","rate":1000.0,"eta_s":3.0})"));
  EXPECT_EQ(events[2], nlohmann::json::parse(R"({"event":"end","task":"push","done":4000,
      "total":4000,"unit":"bytes","elapsed_s":2.0,"rate":2000.0,"ok":true})"));
}

TEST(ProgressTest, JsonEndCarriesErrorAndUnknownEta) {
  Harness h;
  Progress p(h.Options(ProgressMode::kJson), "probe", 0, "hosts");
  h.Advance(milliseconds(1000));
  p.Tick();
  p.Finish(Status::Unavailable("node7 unreachable"));
  p.Finish();  // second call does nothing
  auto events = JsonLines(h.Take());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_TRUE(events[1]["eta_s"].is_null());
  EXPECT_EQ(events[1]["unit"], "hosts");
  EXPECT_EQ(events[2]["ok"], false);
  EXPECT_EQ(events[2]["error"], "node7 unreachable");
}

TEST(ProgressTest, PlainLinesEveryIntervalAndAtEnd) {
  Harness h;
  Progress p(h.Options(ProgressMode::kLines), "pull", 10 << 20);
  p.Add(2 << 20);
  h.Advance(milliseconds(4000));
  p.Tick();
  EXPECT_EQ(h.Take(), "");
  h.Advance(milliseconds(1000));
  p.Tick();
  EXPECT_EQ(h.Take(), "pull: 2.0 MiB / 10.0 MiB (20%), 409.6 KiB/s, ETA 20s\n");
  p.Add(8 << 20);
  h.Advance(milliseconds(5000));
  p.Finish();
  EXPECT_EQ(h.Take(), "pull: done, 10.0 MiB in 10s (1.0 MiB/s)\n");
}

TEST(ProgressTest, NoteFollowsTheCountsInLinesAndJson) {
  Harness h;
  Progress p(h.Options(ProgressMode::kLines), "compat soak", 10, "rounds");
  p.Add(2);
  p.SetNote("CV median 1.2%, worst 4.0% copy/fp32");
  h.Advance(milliseconds(5000));
  p.Tick();
  EXPECT_EQ(h.Take(),
            "compat soak: 2 rounds / 10 rounds (20%), 0.4 rounds/s, ETA 20s; CV median "
            "1.2%, worst 4.0% copy/fp32\n");
  p.Finish();
  h.Take();
  Progress j(h.Options(ProgressMode::kJson), "compat soak", 10, "rounds");
  j.SetNote("round 1");
  j.Add(1);
  h.Advance(milliseconds(1000));
  j.Tick();
  std::vector<nlohmann::json> events = JsonLines(h.Take());
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back()["event"], "progress");
  EXPECT_EQ(events.back()["note"], "round 1");
}

TEST(ProgressTest, PlainFailureLine) {
  Harness h;
  Progress p(h.Options(ProgressMode::kLines), "verify", 0, "files");
  p.Add(3);
  h.Advance(milliseconds(2500));
  p.Finish(Status::Corruption("chunk ab12 hash mismatch"));
  EXPECT_EQ(h.Take(), "verify: failed after 2.5s at 3 files: chunk ab12 hash mismatch\n");
}

TEST(ProgressTest, BarRedrawsAtMostTenTimesASecond) {
  Harness h;
  Progress p(h.Options(ProgressMode::kBar), "push", 1000);
  for (int i = 0; i < 100; ++i) {  // one second in 10 ms steps
    p.Add(5);
    p.Tick();
    h.Advance(milliseconds(10));
  }
  std::string out = h.Take();
  EXPECT_EQ(std::count(out.begin(), out.end(), '\r'), 10);
  EXPECT_EQ(out.find('\n'), std::string::npos);
  p.Finish();
  std::string last = h.Take();
  EXPECT_EQ(last,
            "\rpush [###############---------------]  50% 500 B/1000 B 500 B/s ETA 1s\x1b[K\n");
}

TEST(ProgressTest, NoneWritesNothing) {
  Harness h;
  Progress p(h.Options(ProgressMode::kNone), "push", 10);
  p.StartTimer();
  p.Add(10);
  h.Advance(milliseconds(10000));
  p.Tick();
  p.Finish();
  EXPECT_EQ(h.Take(), "");
  EXPECT_EQ(p.done(), 10u);
}

TEST(ProgressTest, ConcurrentAddsWithTimerThread) {
  std::mutex mu;
  std::string out;
  ProgressOptions o;
  o.mode = ProgressMode::kJson;
  o.json_interval = milliseconds(1);
  o.sink = [&](std::string_view s) {
    std::lock_guard<std::mutex> l(mu);
    out += s;
  };
  Progress p(o, "push", 8 * 100000);
  p.StartTimer();
  std::vector<std::thread> workers;
  for (int t = 0; t < 8; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) p.Add(1);
    });
  }
  for (auto& w : workers) w.join();
  // Wait (up to 5 s) for the timer thread to emit a progress event on its own.
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> l(mu);
      if (out.find("\"progress\"") != std::string::npos) break;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  p.Finish();
  EXPECT_EQ(p.done(), 800000u);
  auto events = JsonLines(out);
  ASSERT_GE(events.size(), 3u);  // start, at least one timer-driven progress event, end
  EXPECT_EQ(events.back()["event"], "end");
  EXPECT_EQ(events.back()["done"], 800000);
  uint64_t last = 0;
  for (const auto& e : events) {
    if (e["event"] != "progress") continue;
    EXPECT_GE(e["done"].get<uint64_t>(), last);  // monotonic
    last = e["done"].get<uint64_t>();
  }
}

}  // namespace
}  // namespace cutover
