#include "datasync/check.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "core/units.h"
#include "datasync/snapshots.h"

namespace cutover {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string Sample(uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (uint64_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    for (uint64_t j = 0; j < 8 && i + j < n; ++j) s[i + j] = static_cast<char>(v >> (8 * j));
  }
  return s;
}

// `v` as 16 hex digits.
std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

Result<CheckResult> CheckStore(Store& store, const CheckOptions& options) {
  if (options.sample_bytes < 1) return Status::InvalidArgument("--sample-bytes must be at least 1");
  if (options.latency_samples < 1) return Status::InvalidArgument("latency samples must be >= 1");
  uint64_t seed = options.seed != 0
                      ? options.seed
                      : static_cast<uint64_t>(Clock::now().time_since_epoch().count()) ^
                            (static_cast<uint64_t>(::getpid()) << 40);
  CheckResult out;
  out.probe_key = "check/probe-" + Hex(seed);
  const std::string sample = Sample(options.sample_bytes, seed);

  auto run = [&](const std::string& name, bool runnable, auto&& body) {
    CheckStep step;
    step.name = name;
    if (!runnable) {
      step.result = "skipped";
      step.detail = "an earlier step failed";
    } else {
      auto t0 = Clock::now();
      Status s = body(step);
      step.seconds = SecondsSince(t0);
      step.result = s.ok() ? "ok" : "failed";
      if (!s.ok()) step.detail = s.message();
    }
    out.steps.push_back(std::move(step));
    return out.steps.back().result == "ok";
  };

  run("list", true, [&](CheckStep& step) {
    uint64_t n = 0;
    Status s;
    for (const char* prefix : {kSeriesPrefix, "snapshots/"}) {  // (written before ids)
      if (s.ok()) {
        s = store.List(prefix, [&n](std::string_view, uint64_t) {
          ++n;
          return Status::Ok();
        });
      }
    }
    out.snapshots = n;
    step.detail = std::to_string(n) + " snapshots";
    return s;
  });
  run("config", true, [&](CheckStep& step) {
    Result<std::string> c = store.Get(kConfigKey);
    if (!c.ok() && c.status().code() == Code::kNotFound) {
      step.detail = "absent: a new store (the first push writes it)";
      return Status::Ok();
    }
    if (!c.ok()) return c.status();
    out.config_present = true;
    step.detail = "present (" + std::to_string(c->size()) + " bytes)";
    return Status::Ok();
  });
  bool put_ok = run("put", true, [&](CheckStep& step) {
    auto t0 = Clock::now();
    Status s = store.Put(out.probe_key, sample);
    if (!s.ok()) return s;
    double dt = std::max(1e-9, SecondsSince(t0));
    step.bytes_per_s = static_cast<double>(sample.size()) / dt;
    step.detail = "wrote " + std::to_string(sample.size()) + " bytes to " + out.probe_key;
    return Status::Ok();
  });
  run("head", put_ok, [&](CheckStep& step) {
    std::vector<double> ms;
    for (int i = 0; i < options.latency_samples; ++i) {
      auto t0 = Clock::now();
      Result<uint64_t> size = store.Head(out.probe_key);
      ms.push_back(SecondsSince(t0) * 1000);
      if (!size.ok()) return size.status();
      if (*size != sample.size()) {
        return Status::Corruption("head reports " + std::to_string(*size) + " bytes, " +
                                  std::to_string(sample.size()) + " were written");
      }
    }
    std::sort(ms.begin(), ms.end());
    out.latency_ms = ms[ms.size() / 2];
    char buf[96];
    std::snprintf(buf, sizeof(buf), "round trip median %.3f ms of %d", *out.latency_ms,
                  options.latency_samples);
    step.detail = buf;
    return Status::Ok();
  });
  bool can_read = run("get", put_ok, [&](CheckStep& step) {
    auto t0 = Clock::now();
    Result<std::string> got = store.Get(out.probe_key);
    if (!got.ok()) return got.status();
    double dt = std::max(1e-9, SecondsSince(t0));
    if (*got != sample) {
      return Status::Corruption("read back " + std::to_string(got->size()) +
                                " bytes that differ from the " + std::to_string(sample.size()) +
                                " written");
    }
    step.bytes_per_s = static_cast<double>(got->size()) / dt;
    step.detail = "read back " + std::to_string(got->size()) + " identical bytes";
    return Status::Ok();
  });
  run("range", can_read, [&](CheckStep& step) {
    uint64_t off = sample.size() / 3;
    uint64_t len = std::max<uint64_t>(1, std::min<uint64_t>(sample.size() - off, 4096));
    Result<std::string> got = store.GetRange(out.probe_key, off, len);
    if (!got.ok()) return got.status();
    if (*got != sample.substr(off, len)) {
      return Status::Corruption("bytes " + std::to_string(off) + ".." + std::to_string(off + len) +
                                " differ from those written");
    }
    step.detail = std::to_string(len) + " bytes at offset " + std::to_string(off);
    return Status::Ok();
  });
  run("listed", put_ok, [&](CheckStep& step) {
    bool seen = false;
    Status s = store.List("check/", [&](std::string_view key, uint64_t) {
      seen = seen || key == out.probe_key;
      return Status::Ok();
    });
    if (!s.ok()) return s;
    if (!seen) return Status::FailedPrecondition("the listing of check/ does not show the probe");
    step.detail = "the probe is listed";
    return Status::Ok();
  });
  // Always attempted: even a failed Put may have left the object behind.
  bool deleted = run("delete", true, [&](CheckStep& step) {
    CUTOVER_RETURN_IF_ERROR(store.Delete(out.probe_key));
    Result<uint64_t> after = store.Head(out.probe_key);
    if (after.ok()) return Status::FailedPrecondition("the probe is still there after delete");
    if (after.status().code() != Code::kNotFound) return after.status();
    step.detail = "removed " + out.probe_key;
    return Status::Ok();
  });
  out.probe_left = !deleted;
  out.ok = std::all_of(out.steps.begin(), out.steps.end(),
                       [](const CheckStep& s) { return s.result == "ok"; });
  return out;
}

nlohmann::json CheckResultToJson(const CheckResult& r, const CheckOptions& opts,
                                 std::string_view store_url) {
  nlohmann::json steps = nlohmann::json::array();
  for (const CheckStep& st : r.steps) {
    nlohmann::json j = {
        {"name", st.name}, {"result", st.result}, {"detail", st.detail}, {"seconds", st.seconds}};
    if (st.bytes_per_s) j["bytes_per_s"] = *st.bytes_per_s;
    steps.push_back(std::move(j));
  }
  nlohmann::json doc = {{"schema", "cutover.datasync-check/1"},
                        {"store", store_url},
                        {"ok", r.ok},
                        {"probe_key", r.probe_key},
                        {"probe_left", r.probe_left},
                        {"snapshots", r.snapshots},
                        {"config_present", r.config_present},
                        {"sample_bytes", opts.sample_bytes},
                        {"steps", steps}};
  if (r.latency_ms) doc["latency_ms"] = *r.latency_ms;
  return doc;
}

std::string RenderCheckResult(const CheckResult& r, const CheckOptions& /*opts*/,
                              std::string_view store_url) {
  std::string table = "STEP\tRESULT\tTIME\tDETAIL\n";
  for (const CheckStep& st : r.steps) {
    std::string detail = st.detail;
    if (st.bytes_per_s) detail += " (" + FormatRate(*st.bytes_per_s) + ")";
    table += st.name + "\t" + st.result + "\t" +
             FormatDuration(std::chrono::milliseconds(static_cast<int64_t>(st.seconds * 1000))) +
             "\t" + detail + "\n";
  }
  table += std::string(r.ok ? "store ok: " : "store FAILED: ") + std::string(store_url) +
           (r.ok ? " allows list, read, write, ranged read and delete"
                 : " refuses what push or pull needs (see the failed steps)") +
           "\n";
  if (r.probe_left) table += "the probe object " + r.probe_key + " could not be removed\n";
  return table;
}

}  // namespace cutover
