// Real servers started on 127.0.0.1 for integration tests: nginx with WebDAV, HAProxy with its
// runtime API and Prometheus exporter, Prometheus, and the npm S3 server s3rver. Each server runs
// as a child process in its own process group, with its config, logs and data in a private
// temporary directory that is removed when the object is destroyed.
//
//   NginxDav dav;
//   Status s = dav.Start();   // Environment: binary missing; Unavailable: it did not come up
//   if (s.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(s.message());
//   ... dav.url() ...         // "http://127.0.0.1:<port>"
//
// Start() returns only once the server answers (or fails with the tail of its log). Stop() sends
// SIGTERM, waits, then SIGKILLs the whole process group; the destructor calls it. A child also
// gets SIGTERM when the thread that started it dies (PR_SET_PDEATHSIG), so a killed test run
// leaves no servers behind.
//
// Thread-safety: one object is used by one thread at a time; distinct objects are independent.
#ifndef CUTOVER_TESTS_HARNESS_SERVERS_H_
#define CUTOVER_TESTS_HARNESS_SERVERS_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace cutover::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then closed). Another
// process may take it before it is used: servers retry Start() with a new port when that happens.
int FreeLoopbackPort();

// True when something accepts TCP connections on 127.0.0.1:port.
bool LoopbackPortOpen(int port);

// A minimal HTTP exchange over libcurl for tests (not the project's HTTP client).
struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::string body;                  // sent for any method when non-empty (or when upload=true)
  bool upload = false;               // send `body` even when empty (PUT of an empty file)
  std::vector<std::string> headers;  // "Name: value"
  std::string aws_sigv4;             // CURLOPT_AWS_SIGV4, e.g. "aws:amz:us-east-1:s3"
  std::string userpwd;               // CURLOPT_USERPWD ("KEY:SECRET" with aws_sigv4)
  std::string ca_file;               // CURLOPT_CAINFO; empty: the system store
  long timeout_ms = 5000;
};
struct HttpResponse {
  long status = 0;    // 0 when no response came
  int curl_code = 0;  // CURLcode
  std::string error;  // curl's error text when curl_code != 0
  std::string body;
  std::map<std::string, std::string> headers;  // lower-cased names; the last value wins
};
HttpResponse HttpFetch(const HttpRequest& request);

// A supervised child process with its output in a log file.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess() { Stop(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts argv[0] (an absolute path) with stdout and stderr appended to `log_path`, in a new
  // process group. Environment when argv[0] is not executable; IoError when fork fails.
  Status Spawn(const std::vector<std::string>& argv, const std::string& log_path);
  // True while the child has not exited (reaps it when it has).
  bool Running();
  // SIGTERM to the child, up to `grace` for it to exit, then SIGKILL to its process group.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
  // Sends `sig` to the child itself. REQUIRES: Running().
  void Signal(int sig);
  pid_t pid() const { return pid_ > 0 ? pid_ : -1; }
  // How the child ended ("exit 1", "signal 9"); empty while running.
  const std::string& exit_description() const { return exit_; }

 private:
  pid_t pid_ = -1;
  std::string exit_;
};

// What every server shares: a private temporary directory, a child process, a port.
class TestServer {
 public:
  virtual ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  // Starts the server and waits (up to start_timeout) until it answers. Environment when a binary
  // it needs is missing; Unavailable with the tail of its log when it exits or does not answer.
  // Retries with a fresh port when the port was taken meanwhile. REQUIRES: not running.
  Status Start();
  // Stops the server (SIGTERM, then SIGKILL); harmless when not running.
  void Stop();
  bool Running() { return process_.Running(); }

  int port() const { return port_; }
  // "http://127.0.0.1:<port>" ("https://" for a TLS server).
  virtual std::string url() const;
  // The private directory (config, logs, data); removed by the destructor.
  const std::string& dir() const { return dir_; }
  const std::string& log_path() const { return log_path_; }
  // The last `max_bytes` of the server's log (what Start() quotes on failure).
  std::string LogTail(size_t max_bytes = 2000) const;
  pid_t pid() const { return process_.pid(); }

  std::chrono::milliseconds start_timeout = std::chrono::milliseconds(15000);

 protected:
  explicit TestServer(std::string name);
  // Checks binaries and writes config files for the ports chosen (port_ and any others).
  virtual Status Prepare() = 0;
  virtual std::vector<std::string> Argv() const = 0;
  // OK once the server answers; any error means "not yet".
  virtual Status Ready() = 0;
  // Picks the ports before Prepare(); the default picks port_ only.
  virtual void PickPorts();
  // Requires `path` to be executable, else Environment naming it and the package.
  static Status RequireExecutable(const std::string& path, const std::string& package);

  std::string name_;
  std::string dir_;
  std::string log_path_;
  int port_ = 0;
  ChildProcess process_;
};

// nginx serving a directory over WebDAV: PUT DELETE MKCOL COPY MOVE from the dav module,
// PROPFIND and OPTIONS from Debian's dav-ext module, intermediate directories created on PUT,
// no body size limit. Optional TLS with a self-signed certificate for 127.0.0.1 and localhost.
struct NginxDavOptions {
  std::string root;  // served directory; empty: <dir>/root (created)
  bool tls = false;  // HTTPS with a fresh self-signed certificate (see cert_path())
  std::string nginx = "/usr/sbin/nginx";
  std::string dav_ext_module = "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so";
  std::string extra_server_config;  // appended inside the server block
  std::string extra_http_config;    // appended inside the http block (upstreams, includes)
};
class NginxDav : public TestServer {
 public:
  explicit NginxDav(NginxDavOptions options = {});
  std::string url() const override;
  const std::string& root() const { return root_; }
  // The PEM certificate of a TLS server (use as the CA file to verify it).
  std::string cert_path() const { return dir_ + "/cert.pem"; }
  // Re-reads the config (nginx -s reload semantics, SIGHUP to the master).
  Status Reload();

 protected:
  Status Prepare() override;
  std::vector<std::string> Argv() const override;
  Status Ready() override;

 private:
  NginxDavOptions options_;
  std::string root_;
};

// HAProxy: one HTTP frontend (port()) balancing one backend of named servers, the runtime API on
// a unix socket at level admin, and a second frontend (metrics_port()) serving the built-in
// Prometheus exporter at /metrics. Runs in master-worker mode (-W), so the pid stays the same
// across Reload().
struct HaproxyServer {
  std::string name;     // "s1"
  std::string address;  // "127.0.0.1:8080"
  int weight = 1;       // 0..256
};
struct HaproxyOptions {
  std::string backend = "infer";
  std::string balance = "roundrobin";  // a dynamic algorithm, so runtime weights apply
  std::vector<HaproxyServer> servers;
  bool health_checks = false;  // "check inter 500ms" on every server
  std::string haproxy = "/usr/sbin/haproxy";
};
class Haproxy : public TestServer {
 public:
  explicit Haproxy(HaproxyOptions options);
  int metrics_port() const { return metrics_port_; }
  // "http://127.0.0.1:<metrics_port>/metrics"
  std::string metrics_url() const;
  // The runtime API socket ("<dir>/admin.sock").
  std::string admin_socket() const { return dir_ + "/admin.sock"; }
  // Sends one runtime API command ("show stat", "set weight infer/s1 0") and returns the reply.
  Result<std::string> AdminCommand(const std::string& command);

  enum class ReloadState {
    kDrop,  // like a plain `systemctl reload haproxy`: runtime weights revert to the config
    kKeep,  // dump `show servers state` first, so the new worker loads the runtime weights
  };
  // Graceful reload (SIGUSR2 to the master: a new worker reads the config, the old one finishes
  // its connections). Returns once the runtime API answers from the new worker.
  Status Reload(ReloadState state = ReloadState::kDrop);

 protected:
  void PickPorts() override;
  Status Prepare() override;
  std::vector<std::string> Argv() const override;
  Status Ready() override;

 private:
  Result<int> WorkerPid();

  HaproxyOptions options_;
  int metrics_port_ = 0;
};

// Prometheus scraping the given jobs, with its TSDB in the private directory. Ready when
// /-/ready answers 200. The lifecycle API is on (POST /-/reload, /-/quit).
struct PrometheusJob {
  std::string name;                  // job label
  std::vector<std::string> targets;  // "127.0.0.1:8405"
  std::string metrics_path = "/metrics";
};
struct PrometheusOptions {
  std::vector<PrometheusJob> jobs;
  std::chrono::milliseconds scrape_interval = std::chrono::milliseconds(1000);
  std::string prometheus = "/usr/bin/prometheus";
};
class Prometheus : public TestServer {
 public:
  explicit Prometheus(PrometheusOptions options);

 protected:
  Status Prepare() override;
  std::vector<std::string> Argv() const override;
  Status Ready() override;

 private:
  PrometheusOptions options_;
};

// s3rver (npm, pinned in tests/servers/package-lock.json; `npm ci --prefix tests/servers`) on
// 127.0.0.1 with one bucket created at start. Credentials S3RVER/S3RVER; path-style URLs
// (url() + "/" + bucket + "/" + key); region us-east-1. Every request needs an
// x-amz-content-sha256 header (libcurl 7.88 does not add one for "aws:amz:...:s3"). s3rver 3.7.1
// checks the access key id but NOT the V4 signature, nor the payload hash: use it for request
// shape and data round trips, not to test signing.
struct S3rverOptions {
  std::string bucket = "cutover";
  std::string node = "/usr/bin/node";
  // The s3rver entry point; empty: $CUTOVER_SOURCE_DIR/tests/servers/node_modules/s3rver/bin/
  // s3rver.js (the source dir defaults to the working directory).
  std::string script;
};
class S3rver : public TestServer {
 public:
  static constexpr char kAccessKey[] = "S3RVER";
  static constexpr char kSecretKey[] = "S3RVER";
  static constexpr char kSigV4[] = "aws:amz:us-east-1:s3";

  explicit S3rver(S3rverOptions options = {});
  const std::string& bucket() const { return options_.bucket; }
  // url() + "/" + bucket + "/" + key
  std::string ObjectUrl(const std::string& key) const;

 protected:
  Status Prepare() override;
  std::vector<std::string> Argv() const override;
  Status Ready() override;

 private:
  S3rverOptions options_;
  std::string script_;
};

}  // namespace cutover::testing

#endif  // CUTOVER_TESTS_HARNESS_SERVERS_H_
