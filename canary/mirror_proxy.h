// The mirroring proxy of `cutover canary mirror`: an HTTP/1.1 server (Boost.Beast over Asio) that
// answers every client request with the primary's response, and copies requests of the mirrored
// methods to a second primary (the secondary) and the candidate off the client's path, comparing
// the three answers with canary/mirror_compare.
//
//   MirrorProxy proxy(options);
//   CUTOVER_RETURN_IF_ERROR(proxy.CheckUpstreams());
//   CUTOVER_RETURN_IF_ERROR(proxy.Start());
//   proxy.WaitUntilDone(&stop_flag, deadline);
//   proxy.Stop();
//   MirrorSummary s = proxy.Summarize();
//
// The client path: parse the request, send it to the primary over libcurl (core/http_client, a
// pool of keep-alive connections, one attempt: the proxy does not retry for the client), and
// stream the primary's status, headers and body back as they arrive (its Content-Length kept,
// chunked when it gave none), so the client's first byte does not wait for the last and the
// proxy holds no whole answer. Hop-by-hop headers are not forwarded either way, and
// Accept-Encoding is not forwarded, so every upstream answers with a body that can be compared. A
// primary that does not answer gets the client a 502 (counted); one that fails after its head
// went out closes the client's connection (counted). Then, for a mirrored method, the request and
// a copy of the primary's answer go on a bounded queue; when it is full the copy is dropped and
// counted, never waited for. Worker threads, at nice 10 so that the client path wins a contended
// CPU, send each copy to the secondary and the candidate and add the three answers to the
// aggregator; a copy that an upstream does not answer is counted and not compared. Bodies kept to
// compare stop at max_compare_body: past it the triple is counted too_large and not compared (a
// primary answer that large is not copied; a copy's transfer is cut there, so an endless body
// ends).
//
// Connections: one thread each, at most `max_connections` at once (more are closed at accept),
// closed after `idle_timeout` without a request. Neither request bodies nor header values are
// logged.
//
// Thread-safety: Start, WaitUntilDone and Stop are called from one thread; traffic(), Summarize()
// and port() from any thread.
#ifndef CUTOVER_CANARY_MIRROR_PROXY_H_
#define CUTOVER_CANARY_MIRROR_PROXY_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "canary/mirror_compare.h"
#include "core/status.h"

namespace cutover::canary {

struct MirrorProxyOptions {
  std::string listen = "127.0.0.1:8480";      // HOST:PORT (an IP address; port 0: the kernel picks)
  std::string primary, secondary, candidate;  // http:// or https:// base URLs
  std::vector<std::string> methods = {"GET", "HEAD"};  // mirrored; others are only proxied
  MirrorCompareOptions compare;
  size_t queue_capacity = 1024;  // copies waiting for a worker
  // Bytes of request and primary bodies those copies may hold; past it a copy is dropped.
  uint64_t max_queue_bytes = 256ull << 20;
  int workers = 2;            // threads sending copies
  int max_connections = 256;  // client connections at once
  std::chrono::milliseconds idle_timeout{60000};
  std::chrono::milliseconds upstream_timeout{30000};
  std::chrono::milliseconds check_timeout{5000};  // CheckUpstreams, per upstream
  uint64_t max_request_body = 64ull << 20;        // request bodies from clients (413 past it)
  // Bodies kept to compare, per answer: a larger one is counted too_large, not compared, and never
  // held past this (the client's answer is streamed through whatever its size).
  uint64_t max_compare_body = 4ull << 20;
  int64_t max_requests = 0;  // WaitUntilDone returns after this many answers (0: no limit)
};

// InvalidArgument naming the flag, e.g.
//   "mirror: --candidate 'localhost:8000': expected an http:// or https:// URL"
//   "mirror: --listen '8080': expected HOST:PORT"
//   "mirror: --methods 'GE T': not an HTTP method"
// and the compare options' errors (ValidateMirrorCompareOptions).
Status ValidateMirrorProxyOptions(const MirrorProxyOptions& options);

// `base` (an upstream URL) joined with a request target ("/v1/x?y"): the base's path, without a
// trailing '/', then the target.
std::string JoinUpstreamUrl(const std::string& base, const std::string& target);

class MirrorProxy {
 public:
  explicit MirrorProxy(MirrorProxyOptions options);
  ~MirrorProxy();  // Stop()
  MirrorProxy(const MirrorProxy&) = delete;
  MirrorProxy& operator=(const MirrorProxy&) = delete;

  // Sends GET to each upstream's base URL once; any HTTP answer will do. Unavailable, e.g.
  //   "mirror: the candidate (http://127.0.0.1:9/) does not answer: GET http://127.0.0.1:9/:
  //    Couldn't connect to server (...) after 1 attempt"
  Status CheckUpstreams();

  // Validates the options, binds the listen address and starts serving. InvalidArgument for bad
  // options; Unavailable when the address cannot be bound.
  Status Start();

  // The bound port (after Start).
  int port() const { return port_.load(); }

  // Blocks until *stop is set (may be null), `deadline` passes (when set), or max_requests
  // answers have been written.
  void WaitUntilDone(const std::atomic<bool>* stop,
                     std::optional<std::chrono::steady_clock::time_point> deadline);

  // Stops accepting, closes client connections, lets the workers finish the queued copies for up
  // to `drain` (what is left is counted dropped), and joins every thread. Idempotent.
  void Stop(std::chrono::milliseconds drain = std::chrono::milliseconds(30000));

  MirrorTraffic traffic() const;
  MirrorSummary Summarize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<int> port_{0};
};

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_MIRROR_PROXY_H_
