// The nginx traffic provider: weights are written into the `upstream` block of an include file,
// checked with the test command (`nginx -t`), then made live with the reload command.
//
// The file is the operator's: it must hold `upstream NAME { ... }` with a `server` line for
// every baseline and canary address. SetWeights rewrites only the weight of those lines
// (`weight=N`, or `down` for 0); other parameters (max_fails, ...), other servers and other
// directives (keepalive, least_conn, ...) are kept as they were, comments are dropped. When the
// test or the reload fails the previous file is put back, so the file always says what nginx
// runs.
//
// Open source nginx has no API that reports its weights or per-server counters: ReadWeights
// reads the file (what nginx runs once a reload is done), ReadCounters is Unimplemented, and the
// controller confirms a rollback from Prometheus instead.
//
// Thread-safety: the parse and render functions are pure; an NginxTraffic is used by one thread
// at a time.
#ifndef CUTOVER_CANARY_NGINX_TRAFFIC_H_
#define CUTOVER_CANARY_NGINX_TRAFFIC_H_

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "canary/traffic.h"
#include "core/status.h"

namespace cutover::canary {

// One `server` line of an upstream block.
struct UpstreamServer {
  std::string address;
  int weight = 1;  // nginx's default; 0 for `down`
  std::vector<std::string> params;  // every other parameter, verbatim
};

// An upstream block: its statements in order, servers parsed, the rest verbatim.
struct UpstreamBlock {
  std::string name;
  struct Statement {
    bool is_server = false;
    UpstreamServer server;  // is_server
    std::string text;       // otherwise: the directive without its ';'
  };
  std::vector<Statement> statements;
  std::string before;  // the file's text before `upstream NAME {` (comments stripped)
  std::string after;   // and after its closing '}'
};

// Finds `upstream <name> { ... }` in `text` and parses it. InvalidArgument "nginx upstream
// file: ..." when the block is missing, unterminated, nested braces appear inside it, or a
// server line has no address or a bad weight (1..1000000, as nginx allows).
Result<UpstreamBlock> ParseUpstream(std::string_view text, const std::string& name);

// The file text for `block` (one statement per line, indented).
std::string RenderUpstream(const UpstreamBlock& block);

// The weight of every server of the block.
Weights UpstreamWeights(const UpstreamBlock& block);

struct NginxTrafficOptions {
  std::string upstream_file;
  std::string upstream;        // the block's name
  std::string test_command;    // run with /bin/sh -c
  std::string reload_command;  // run with /bin/sh -c
  std::chrono::milliseconds timeout{10000};  // per command
};

class NginxTraffic : public Traffic {
 public:
  explicit NginxTraffic(NginxTrafficOptions options);

  // Rewrites the weights of the named servers, runs the test command, then the reload. On any
  // failure the previous file is restored and nginx is not reloaded. FailedPrecondition naming
  // a server the block lacks (nothing written) or quoting a failed command's last line.
  Status SetWeights(const Weights& weights) override;
  // From the file; NotFound naming a server the block lacks.
  Result<Weights> ReadWeights(const std::vector<std::string>& servers) override;
  // Unimplemented: open source nginx keeps no per-server counters.
  Result<std::map<std::string, ServerCounters>> ReadCounters() override;
  // Empty: a reload keeps the master's pid, and the file is the truth here.
  Result<std::string> Generation() override;
  // Runs the test command (nginx -t) on the file as it is: FailedPrecondition quoting it.
  Status CheckReady() override;

 private:
  // Reads and parses the file (its text into *text when given); errors name the file.
  Result<UpstreamBlock> Load(std::string* text = nullptr);
  Status Run(const std::string& what, const std::string& command);

  NginxTrafficOptions options_;
};

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_NGINX_TRAFFIC_H_
