// cutover-faultproxy: the test harness's fault-injecting TCP proxy as a process, for shell and
// benchmark scripts. Loopback only.
//
//   cutover-faultproxy --listen 127.0.0.1:0 --upstream 127.0.0.1:8080
//       --mode reset:0.1,http_503:0.05 --seed 1 [--granularity request] [--port-file F]
//
// Prints "listening 127.0.0.1:<port>" once it accepts connections, and the counters
// ("connections=.. requests=.. ...") on SIGTERM or SIGINT, then exits 0. Exit 2 on bad arguments,
// 3 when the port cannot be bound.
#include <signal.h>

#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "core/file_util.h"
#include "core/status.h"
#include "tests/harness/fault_proxy.h"

namespace {

using cutover::Result;
using cutover::Status;

// "127.0.0.1:8080" -> host and port; InvalidArgument otherwise.
Status SplitHostPort(const std::string& flag, const std::string& text, std::string* host,
                     int* port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument(flag + " '" + text + "' is not HOST:PORT");
  }
  *host = text.substr(0, colon);
  std::string p = text.substr(colon + 1);
  char* end = nullptr;
  long v = std::strtol(p.c_str(), &end, 10);
  if (p.empty() || *end != '\0' || v < 0 || v > 65535) {
    return Status::InvalidArgument(flag + " '" + text + "' has no valid port");
  }
  *port = static_cast<int>(v);
  return Status::Ok();
}

int Fail(const Status& s) {
  std::cerr << "cutover-faultproxy: " << s.message() << "\n";
  return cutover::ExitCodeFor(s);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fault-injecting TCP proxy on 127.0.0.1 (cutover test harness)"};
  std::string listen = "127.0.0.1:0";
  std::string upstream;
  std::string mode;
  std::string granularity = "connection";
  std::string port_file;
  cutover::testing::FaultProxyOptions o;
  app.add_option("--listen", listen, "127.0.0.1:PORT to listen on (0: a free port)");
  app.add_option("--upstream", upstream, "HOST:PORT to forward to (an IPv4 address)")->required();
  app.add_option("--mode", mode, "faults and rates, e.g. reset:0.1,http_503:0.05");
  app.add_option("--seed", o.seed, "seed of the decision sequence");
  app.add_option("--granularity", granularity, "connection | request (HTTP/1.1 requests)");
  app.add_option("--stall-ms", o.stall_ms, "stall: how long (0: until the client closes)");
  app.add_option("--retry-after", o.retry_after_s, "http_503/http_429: Retry-After seconds");
  app.add_option("--truncate-bytes", o.truncate_bytes, "truncate: response bytes kept");
  app.add_option("--slow-bps", o.slow_bytes_per_s, "slow: bytes per second");
  app.add_option("--port-file", port_file, "write the listening port to this file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  std::string listen_host;
  Status s = SplitHostPort("--listen", listen, &listen_host, &o.listen_port);
  if (!s.ok()) return Fail(s);
  if (listen_host != "127.0.0.1") {
    return Fail(Status::InvalidArgument("--listen must be on 127.0.0.1 (loopback only)"));
  }
  s = SplitHostPort("--upstream", upstream, &o.upstream_host, &o.upstream_port);
  if (!s.ok()) return Fail(s);
  Result<std::vector<cutover::testing::FaultRule>> rules = cutover::testing::ParseFaultRules(mode);
  if (!rules.ok()) return Fail(rules.status());
  o.rules = *rules;
  if (granularity == "request") {
    o.granularity = cutover::testing::FaultGranularity::kHttpRequest;
  } else if (granularity != "connection") {
    return Fail(Status::InvalidArgument("--granularity must be connection or request"));
  }

  // Block the signals before the proxy thread starts, so only sigwait below sees them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  cutover::testing::FaultProxy proxy(o);
  s = proxy.Start();
  if (!s.ok()) return Fail(s);
  if (!port_file.empty()) {
    s = cutover::WriteFileAtomic(port_file, std::to_string(proxy.port()) + "\n");
    if (!s.ok()) return Fail(s);
  }
  std::cout << "listening 127.0.0.1:" << proxy.port() << std::endl;

  int sig = 0;
  sigwait(&set, &sig);
  proxy.Stop();
  std::cout << proxy.counters().ToString() << std::endl;
  return 0;
}
