// The HAProxy traffic provider: absolute server weights through the runtime API (the admin
// socket, a unix path or a TCP host:port, at level admin), read back with `get weight`, and the
// per-server counters from `show stat` (CSV).
//
// HAProxy drops runtime weights when it reloads (they revert to the config file). The provider
// does not hide that: ReadWeights returns what HAProxy uses now and Generation() the worker's
// Pid, and the controller re-asserts its intended weights when they differ.
//
// The parsers are pure and total: any input (they are fuzzed) gives a value or an error Status.
//
// Thread-safety: the parse functions are pure; a HaproxyTraffic is used by one thread at a time.
#ifndef CUTOVER_CANARY_HAPROXY_TRAFFIC_H_
#define CUTOVER_CANARY_HAPROXY_TRAFFIC_H_

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "canary/traffic.h"
#include "core/status.h"

namespace cutover::canary {

// One row of `show stat`.
struct StatRow {
  std::string proxy;   // pxname
  std::string server;  // svname ("FRONTEND" and "BACKEND" for the aggregate rows)
  ServerCounters counters;
};

// Parses `show stat` output: a header line "# pxname,svname,..." naming the columns, then one
// row per line; columns are found by name, so their order and count may vary by version. A row
// with fewer fields than pxname/svname is skipped; a missing or non-numeric counter reads 0.
// InvalidArgument "show stat: ..." without a header naming pxname and svname.
Result<std::vector<StatRow>> ParseShowStat(std::string_view csv);

// Parses a `get weight` reply "30 (initial 0)" into the current weight (0..256, HAProxy's range).
// Any other text (an error such as "No such server.") is InvalidArgument quoting its first line.
Result<int> ParseGetWeight(std::string_view reply);

// Parses `show info` ("Name: value" lines) into a map.
std::map<std::string, std::string> ParseShowInfo(std::string_view text);

struct HaproxyTrafficOptions {
  std::string socket;   // a unix socket path, or
  std::string address;  // "host:port" of a TCP runtime API (exactly one of the two)
  std::string backend;
  std::chrono::milliseconds timeout{5000};  // per command: connect, send and read
};

class HaproxyTraffic : public Traffic {
 public:
  explicit HaproxyTraffic(HaproxyTrafficOptions options);

  // `set weight <backend>/<server> N` for each, raises first; FailedPrecondition quoting HAProxy
  // ("haproxy: set weight infer/x 5: No such server.") when it refuses; InvalidArgument for a
  // weight outside 0..256 (nothing is sent).
  Status SetWeights(const Weights& weights) override;
  Result<Weights> ReadWeights(const std::vector<std::string>& servers) override;
  // The server rows of the backend (aggregate rows left out).
  Result<std::map<std::string, ServerCounters>> ReadCounters() override;
  // `show info` Pid as "pid 123" (the worker changes on every reload in master-worker mode).
  Result<std::string> Generation() override;

  // Sends one command and returns the reply. Unavailable "haproxy runtime API <where>: ..." when
  // it cannot connect or the reply does not come in time.
  Result<std::string> Command(const std::string& command);

 private:
  HaproxyTrafficOptions options_;
};

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_HAPROXY_TRAFFIC_H_
