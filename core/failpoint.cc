#include "core/failpoint.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

namespace cutover::failpoint {

bool g_armed = false;

namespace {

enum class Action { kKill, kAbort, kError, kSleep };

struct Point {
  std::string name;
  long after = 1;
  Action action = Action::kKill;
  long sleep_ms = 0;
  std::atomic<long> hits{0};
};

std::mutex g_mu;
// Points are never freed once published, so Hit can read them without the lock after start-up
// configuration; Configure from tests runs while no other thread hits points.
std::vector<std::unique_ptr<Point>>* g_points = new std::vector<std::unique_ptr<Point>>();

Status ParseEntry(std::string_view entry, Point* p) {
  size_t start = 0;
  int field = 0;
  while (start <= entry.size()) {
    size_t colon = entry.find(':', start);
    std::string_view part = entry.substr(start, colon == std::string_view::npos
                                                    ? std::string_view::npos
                                                    : colon - start);
    if (field == 0) {
      if (part.empty()) return Status::InvalidArgument("failpoint entry with an empty name");
      p->name = std::string(part);
    } else if (part.rfind("after=", 0) == 0) {
      std::string n(part.substr(6));
      char* end = nullptr;
      long v = std::strtol(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || v < 1) {
        return Status::InvalidArgument("failpoint " + p->name + ": after= needs an integer >= 1");
      }
      p->after = v;
    } else if (part == "kill") {
      p->action = Action::kKill;
    } else if (part == "abort") {
      p->action = Action::kAbort;
    } else if (part == "error") {
      p->action = Action::kError;
    } else if (part.rfind("sleep=", 0) == 0) {
      std::string n(part.substr(6));
      char* end = nullptr;
      long v = std::strtol(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || v < 0) {
        return Status::InvalidArgument("failpoint " + p->name + ": sleep= needs milliseconds");
      }
      p->action = Action::kSleep;
      p->sleep_ms = v;
    } else {
      return Status::InvalidArgument("failpoint " + p->name + ": unknown option '" +
                                     std::string(part) + "'");
    }
    ++field;
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return Status::Ok();
}

struct EnvLoader {
  EnvLoader() {
    const char* spec = std::getenv("CUTOVER_FAILPOINTS");
    if (spec != nullptr && *spec != '\0') {
      Status s = Configure(spec);
      if (!s.ok()) {
        // A crash test with a typo must not silently run unarmed.
        std::string msg = "cutover: CUTOVER_FAILPOINTS: " + s.message() + "\n";
        (void)!::write(2, msg.data(), msg.size());
        std::_Exit(2);
      }
    }
  }
};
EnvLoader g_env_loader;

}  // namespace

Status Configure(const std::string& spec) {
  std::vector<std::unique_ptr<Point>> points;
  size_t start = 0;
  while (start < spec.size()) {
    size_t comma = spec.find(',', start);
    std::string_view entry(spec.data() + start,
                           (comma == std::string::npos ? spec.size() : comma) - start);
    if (!entry.empty()) {
      auto p = std::make_unique<Point>();
      CUTOVER_RETURN_IF_ERROR(ParseEntry(entry, p.get()));
      points.push_back(std::move(p));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  // Old points are leaked on purpose: a racing Hit may still hold one.
  for (auto& p : *g_points) (void)p.release();
  *g_points = std::move(points);
  g_armed = !g_points->empty();
  return Status::Ok();
}

bool Hit(std::string_view name) {
  Point* point = nullptr;
  for (auto& p : *g_points) {
    if (p->name == name) {
      point = p.get();
      break;
    }
  }
  if (point == nullptr) return false;
  long n = point->hits.fetch_add(1) + 1;
  if (n < point->after) return false;
  switch (point->action) {
    case Action::kKill:
      if (n == point->after) ::kill(::getpid(), SIGKILL);
      return false;
    case Action::kAbort:
      if (n == point->after) std::abort();
      return false;
    case Action::kSleep:
      if (n == point->after) std::this_thread::sleep_for(std::chrono::milliseconds(point->sleep_ms));
      return false;
    case Action::kError:
      return true;
  }
  return false;
}

long HitCount(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& p : *g_points) {
    if (p->name == name) return p->hits.load();
  }
  return 0;
}

}  // namespace cutover::failpoint
