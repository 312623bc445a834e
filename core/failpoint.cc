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

#include "core/strings.h"

namespace cutover::failpoint {

std::atomic<bool> g_armed{false};

namespace {

enum class Action { kKill, kAbort, kError, kSleep };

struct Point {
  std::string name;
  long after = 1;
  Action action = Action::kKill;
  long sleep_ms = 0;
  std::atomic<long> hits{0};
};

// One armed set, immutable once published. A replaced set and its points are never freed: a Hit
// racing with Configure may still be reading them, and tests configure only a few times.
struct PointSet {
  std::vector<Point*> points;
};

// Constant-initialized, so a point hit during another file's static initialization is safe.
std::atomic<const PointSet*> g_set{nullptr};
std::mutex g_configure_mu;

// Parses a decimal integer >= `min`; false when `text` is anything else.
bool ParseLong(std::string_view text, long min, long* out) {
  if (text.empty() || text.size() > 18) return false;
  long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < min) return false;
  *out = v;
  return true;
}

Status ParseEntry(std::string_view entry, Point* p) {
  size_t start = 0;
  int field = 0;
  bool have_action = false;
  auto set_action = [&](Action a) -> Status {
    if (have_action) {
      return Status::InvalidArgument("failpoint " + p->name + ": more than one action");
    }
    have_action = true;
    p->action = a;
    return Status::Ok();
  };
  for (;;) {
    size_t colon = entry.find(':', start);
    std::string_view part = entry.substr(
        start, colon == std::string_view::npos ? std::string_view::npos : colon - start);
    if (field == 0) {
      if (part.empty()) return Status::InvalidArgument("failpoint entry with an empty name");
      p->name = std::string(part);
    } else if (part.rfind("after=", 0) == 0) {
      if (!ParseLong(part.substr(6), 1, &p->after)) {
        return Status::InvalidArgument("failpoint " + p->name + ": after= needs an integer >= 1");
      }
    } else if (part == "kill") {
      CUTOVER_RETURN_IF_ERROR(set_action(Action::kKill));
    } else if (part == "abort") {
      CUTOVER_RETURN_IF_ERROR(set_action(Action::kAbort));
    } else if (part == "error") {
      CUTOVER_RETURN_IF_ERROR(set_action(Action::kError));
    } else if (part.rfind("sleep=", 0) == 0) {
      if (!ParseLong(part.substr(6), 0, &p->sleep_ms)) {
        return Status::InvalidArgument("failpoint " + p->name + ": sleep= needs milliseconds");
      }
      CUTOVER_RETURN_IF_ERROR(set_action(Action::kSleep));
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

Point* Find(const PointSet* set, std::string_view name) {
  if (set == nullptr) return nullptr;
  for (Point* p : set->points) {
    if (p->name == name) return p;
  }
  return nullptr;
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
  auto set = std::make_unique<PointSet>();
  std::vector<std::unique_ptr<Point>> owned;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string_view entry = Trim(std::string_view(spec).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!entry.empty()) {
      auto p = std::make_unique<Point>();
      CUTOVER_RETURN_IF_ERROR(ParseEntry(entry, p.get()));
      for (const auto& q : owned) {
        if (q->name == p->name) {
          return Status::InvalidArgument("failpoint " + p->name + ": named twice");
        }
      }
      owned.push_back(std::move(p));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (auto& p : owned) set->points.push_back(p.release());
  std::lock_guard<std::mutex> lock(g_configure_mu);
  const bool armed = !set->points.empty();
  // Replaced sets stay reachable from here (so leak checkers stay quiet) and are never freed.
  static auto* retired = new std::vector<const PointSet*>();
  const PointSet* old = g_set.exchange(set.release(), std::memory_order_acq_rel);
  if (old != nullptr) retired->push_back(old);
  g_armed.store(armed, std::memory_order_release);
  return Status::Ok();
}

bool Hit(std::string_view name) {
  Point* point = Find(g_set.load(std::memory_order_acquire), name);
  if (point == nullptr) return false;
  long n = point->hits.fetch_add(1) + 1;
  if (n < point->after) return false;
  switch (point->action) {
    case Action::kKill:
      if (n == point->after) {
        ::kill(::getpid(), SIGKILL);
        std::_Exit(137);  // not reached: SIGKILL cannot be caught
      }
      return false;
    case Action::kAbort:
      if (n == point->after) std::abort();
      return false;
    case Action::kSleep:
      if (n == point->after) {
        std::this_thread::sleep_for(std::chrono::milliseconds(point->sleep_ms));
      }
      return false;
    case Action::kError:
      return true;
  }
  return false;
}

long HitCount(std::string_view name) {
  const Point* point = Find(g_set.load(std::memory_order_acquire), name);
  return point == nullptr ? 0 : point->hits.load();
}

}  // namespace cutover::failpoint
