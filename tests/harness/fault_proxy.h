// A fault-injecting TCP proxy for tests and benchmark scripts: it listens on 127.0.0.1, forwards
// each connection to one upstream host:port, and injects faults at configured rates with a seeded,
// deterministic sequence of decisions.
//
// Granularity (FaultProxyOptions::granularity):
//   kConnection: one decision per accepted connection, taken at accept. The fault applies to the
//     whole connection: drop and reset fire when the client's first bytes arrive (so a client
//     sees them after sending its request), http_* once its first header block is complete,
//     truncate cuts after the first K bytes of upstream->client data, slow throttles all of it,
//     stall holds everything for the first N ms. A client that keeps the connection alive sends
//     its later requests without new decisions: use kHttpRequest for per-request faults.
//   kHttpRequest: the proxy follows HTTP/1.1 request framing client->upstream (Content-Length
//     and chunked bodies; no pipelining expected) and takes one decision per request, when its
//     header block is complete. A fault then applies to that request and its response: drop,
//     reset and the http_* answers end the connection; truncate cuts that response after K bytes
//     (counted from the end of the request header) and closes; slow throttles upstream->client
//     until the next request; stall holds that request for N ms. Bytes that do not parse as
//     HTTP/1.1 end the framing: the rest of that connection is forwarded without new decisions.
//
// Decision i (0-based, counted from Start() or the last SetFaults()) is a pure function of the
// seed and i: u = uniform(seed, i) in [0,1); the rules are tried in order and rule k is chosen
// when u falls in [r_0+..+r_{k-1}, r_0+..+r_k). With rates summing to at most 1, the rest is
// kNone. So the same seed and the same sequence of connections (or requests) gives the same
// faults.
//
// Thread-safety: all public methods are thread-safe. The proxy runs one background thread.
#ifndef CUTOVER_TESTS_HARNESS_FAULT_PROXY_H_
#define CUTOVER_TESTS_HARNESS_FAULT_PROXY_H_

#include <array>
#include <atomic>
#include <map>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/status.h"

namespace cutover::testing {

enum class FaultMode {
  kNone = 0,
  kDrop,      // close without forwarding (a clean FIN after the client's request was read)
  kReset,     // close with RST (SO_LINGER 0)
  kStall,     // forward nothing for stall_ms (0: until the client closes), then carry on
  kHttp503,   // answer 503 Service Unavailable, Retry-After, Connection: close; upstream untouched
  kHttp429,   // the same with 429 Too Many Requests
  kHttp500,   // the same with 500 Internal Server Error (no Retry-After)
  kTruncate,  // forward the response but close after truncate_bytes of it
  kSlow,      // forward the response at slow_bytes_per_s
};
inline constexpr int kFaultModeCount = 9;

// "none", "drop", "reset", "stall", "http_503", "http_429", "http_500", "truncate", "slow".
std::string_view FaultModeName(FaultMode mode);
// The inverse of FaultModeName; InvalidArgument for an unknown name.
Result<FaultMode> ParseFaultMode(std::string_view name);

struct FaultRule {
  FaultMode mode = FaultMode::kNone;
  double rate = 0;  // 0..1
};
// Parses "reset:0.1,http_503:0.05" (a rule without ":rate" has rate 1). InvalidArgument for an
// unknown mode, a rate outside 0..1, or rates summing to more than 1.
Result<std::vector<FaultRule>> ParseFaultRules(std::string_view spec);

enum class FaultGranularity { kConnection, kHttpRequest };

struct FaultProxyOptions {
  std::string upstream_host = "127.0.0.1";  // an IPv4 address
  int upstream_port = 0;
  int listen_port = 0;  // on 127.0.0.1; 0: a free port
  FaultGranularity granularity = FaultGranularity::kConnection;
  std::vector<FaultRule> rules;
  uint64_t seed = 1;
  int stall_ms = 0;                 // kStall: 0 holds until the client closes
  int retry_after_s = 1;            // kHttp503 / kHttp429: the Retry-After value
  uint64_t truncate_bytes = 0;      // kTruncate: response bytes forwarded before the close
  double slow_bytes_per_s = 65536;  // kSlow
  // kHttpRequest: once one request line (method and target) has drawn this many faults, it
  // passes clean from then on, so a client that retries more often than this must get through
  // whatever order concurrent requests draw their decisions in. 0: no cap.
  int max_faults_per_request = 0;
};

struct FaultProxyCounters {
  uint64_t connections = 0;                        // accepted
  uint64_t requests = 0;                           // HTTP requests seen (kHttpRequest only)
  uint64_t decisions = 0;                          // decisions taken (faults plus kNone)
  std::array<uint64_t, kFaultModeCount> faults{};  // by FaultMode; [kNone] counts clean ones
  uint64_t bytes_to_upstream = 0;                  // forwarded client -> upstream
  uint64_t bytes_to_client = 0;  // forwarded upstream -> client (proxy answers not
                                 // counted)
  uint64_t upstream_connect_errors = 0;
  uint64_t spared = 0;  // requests passed clean by max_faults_per_request (counted as kNone)
  uint64_t fault(FaultMode m) const { return faults[static_cast<int>(m)]; }
  // "connections=3 requests=0 decisions=3 bytes_to_upstream=.. bytes_to_client=.. drop=1 ..."
  std::string ToString() const;
};

class FaultProxy {
 public:
  explicit FaultProxy(FaultProxyOptions options);
  ~FaultProxy();  // Stop()
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // Binds the listening socket and starts the background thread. IoError when the port cannot
  // be bound; InvalidArgument for a bad upstream address or rule set.
  Status Start();
  // Closes every connection and joins the thread; harmless when not running.
  void Stop();

  int port() const { return port_; }
  // "http://127.0.0.1:<port>"
  std::string url() const;

  // Replaces the rules and seed and restarts the decision sequence at 0; applies to decisions
  // taken from now on (connections already faulted keep their fault).
  Status SetFaults(std::vector<FaultRule> rules, uint64_t seed);
  // Replaces every option except the addresses and the granularity (those are read once).
  Status SetOptions(const FaultProxyOptions& options);

  FaultProxyCounters counters() const;
  // Every decision in order since the last SetFaults() (kNone included).
  std::vector<FaultMode> decisions() const;

  // The decision the rules give for index i (what the proxy takes, unless
  // max_faults_per_request spares the request); pure.
  static FaultMode Decide(const std::vector<FaultRule>& rules, uint64_t seed, uint64_t i);

 private:
  struct Conn;
  void Loop();
  // `request` is the request line in kHttpRequest mode, empty for a connection decision.
  FaultMode NextDecision(std::string_view request = {});
  // One poll round's worth of work on a connection; false when it is finished.
  bool Service(Conn& c, short client_events, short upstream_events);
  void ApplyFault(Conn& c, FaultMode mode);
  void ParseRequests(Conn& c);
  void FinishWithAnswer(Conn& c, FaultMode mode);

  FaultProxyOptions options_;  // guarded by mu_ after Start()
  mutable std::mutex mu_;
  FaultProxyCounters counters_;
  std::vector<FaultMode> decisions_;
  uint64_t next_index_ = 0;
  std::map<std::string, int, std::less<>> faults_by_request_;

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  uint32_t upstream_addr_ = 0;  // network order
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::unique_ptr<Conn>> conns_;  // owned by the thread
};

}  // namespace cutover::testing

#endif  // CUTOVER_TESTS_HARNESS_FAULT_PROXY_H_
