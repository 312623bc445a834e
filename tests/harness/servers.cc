#include "tests/harness/servers.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/file_util.h"

namespace cutover::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

std::string MakeTempDir(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
  std::string templ = base + "/cutover-" + name + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return "";
  return templ;
}

std::string SourceDirOrCwd() {
  const char* d = std::getenv("CUTOVER_SOURCE_DIR");
  if (d != nullptr && *d != '\0') return d;
  std::error_code ec;
  return std::filesystem::current_path(ec).string();
}

Status WriteText(const std::string& path, const std::string& text) {
  return WriteFileAtomic(path, text, 0644);
}

size_t CollectBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

size_t CollectHeader(char* data, size_t size, size_t n, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string line(data, size * n);
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    size_t b = value.find_first_not_of(" \t");
    size_t e = value.find_last_not_of(" \t\r\n");
    (*headers)[name] = (b == std::string::npos) ? "" : value.substr(b, e - b + 1);
  }
  return size * n;
}

struct UploadSource {
  const std::string* data;
  size_t offset = 0;
};

size_t ReadUpload(char* buffer, size_t size, size_t n, void* user) {
  auto* src = static_cast<UploadSource*>(user);
  size_t left = src->data->size() - src->offset;
  size_t k = std::min(left, size * n);
  std::memcpy(buffer, src->data->data() + src->offset, k);
  src->offset += k;
  return k;
}

}  // namespace

int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    socklen_t len = sizeof(addr);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
  }
  ::close(fd);
  return port;
}

bool LoopbackPortOpen(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

HttpResponse HttpFetch(const HttpRequest& request) {
  HttpResponse response;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) {
    response.curl_code = CURLE_FAILED_INIT;
    response.error = "curl_easy_init failed";
    return response;
  }
  char error[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  for (const std::string& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  UploadSource upload{&request.body};
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, request.timeout_ms);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, CollectBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, CollectHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response.headers);
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (!request.body.empty() || request.upload) {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, ReadUpload);
    curl_easy_setopt(curl, CURLOPT_READDATA, &upload);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    if (request.method != "PUT") {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
  } else if (request.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (headers != nullptr) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (!request.aws_sigv4.empty()) {
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, request.aws_sigv4.c_str());
  }
  if (!request.userpwd.empty()) curl_easy_setopt(curl, CURLOPT_USERPWD, request.userpwd.c_str());
  if (!request.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, request.ca_file.c_str());
  CURLcode rc = curl_easy_perform(curl);
  response.curl_code = rc;
  if (rc != CURLE_OK) response.error = error[0] != '\0' ? error : curl_easy_strerror(rc);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return response;
}

// ChildProcess ----------------------------------------------------------------------------------

Status ChildProcess::Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  if (argv.empty()) return Status::InvalidArgument("no command");
  if (::access(argv[0].c_str(), X_OK) != 0) {
    return Status::Environment(argv[0] + " is not executable: " + std::strerror(errno));
  }
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::IoError("open " + log_path + ": " + std::strerror(errno));
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(log_fd);
    if (devnull >= 0) ::close(devnull);
    return Status::IoError(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also in the parent, so Stop() can signal the group at once
  ::close(log_fd);
  if (devnull >= 0) ::close(devnull);
  pid_ = pid;
  exit_.clear();
  return Status::Ok();
}

bool ChildProcess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) {
    exit_ = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                              : "signal " + std::to_string(WTERMSIG(status));
  } else {
    exit_ = "lost";
  }
  pid_ = -pid_;  // keep the group id for the final SIGKILL
  return false;
}

void ChildProcess::Signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

void ChildProcess::Stop(milliseconds grace) {
  if (pid_ == 0 || pid_ == -1) return;
  if (Running()) {
    ::kill(pid_, SIGTERM);
    auto deadline = steady_clock::now() + grace;
    while (Running() && steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    if (Running()) {
      ::kill(-pid_, SIGKILL);
      while (Running()) std::this_thread::sleep_for(milliseconds(5));
    }
  }
  // Workers left behind by a master that died (the group id is the child's pid).
  ::kill(pid_, SIGKILL);
  pid_ = -1;
}

// TestServer ------------------------------------------------------------------------------------

TestServer::TestServer(std::string name) : name_(std::move(name)) {
  dir_ = MakeTempDir(name_);
  log_path_ = dir_ + "/" + name_ + ".log";
}

TestServer::~TestServer() {
  process_.Stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string TestServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void TestServer::PickPorts() { port_ = FreeLoopbackPort(); }

Status TestServer::RequireExecutable(const std::string& path, const std::string& package) {
  if (::access(path.c_str(), X_OK) == 0) return Status::Ok();
  return Status::Environment(path + " not found (install " + package + ")");
}

std::string TestServer::LogTail(size_t max_bytes) const {
  Result<std::string> text = ReadFile(log_path_);
  if (!text.ok()) return "";
  const std::string& t = *text;
  return t.size() <= max_bytes ? t : t.substr(t.size() - max_bytes);
}

Status TestServer::Start() {
  if (dir_.empty()) return Status::IoError("cannot create a temporary directory for " + name_);
  if (process_.Running()) return Status::FailedPrecondition(name_ + " is already running");
  constexpr int kAttempts = 3;
  Status last;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    PickPorts();
    CUTOVER_RETURN_IF_ERROR(Prepare());
    std::vector<std::string> argv = Argv();
    CUTOVER_RETURN_IF_ERROR(process_.Spawn(argv, log_path_));
    auto deadline = steady_clock::now() + start_timeout;
    bool exited = false;
    while (steady_clock::now() < deadline) {
      if (!process_.Running()) {
        exited = true;
        break;
      }
      if (Ready().ok()) return Status::Ok();
      std::this_thread::sleep_for(milliseconds(25));
    }
    std::string tail = LogTail();
    if (exited) {
      last = Status::Unavailable(name_ + " exited (" + process_.exit_description() +
                                 ") during start; log tail:\n" + tail);
      // Someone took a port between FreeLoopbackPort() and bind(): try again with new ones.
      if (tail.find("in use") != std::string::npos) continue;
      return last;
    }
    process_.Stop();
    Status why = Ready();
    return Status::Unavailable(name_ + " not ready after " + std::to_string(start_timeout.count()) +
                               " ms (" + why.message() + "); log tail:\n" + LogTail());
  }
  return last;
}

void TestServer::Stop() { process_.Stop(); }

// NginxDav --------------------------------------------------------------------------------------

NginxDav::NginxDav(NginxDavOptions options) : TestServer("nginx"), options_(std::move(options)) {
  root_ = options_.root.empty() ? dir_ + "/root" : options_.root;
}

std::string NginxDav::url() const {
  return std::string(options_.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

Status NginxDav::Prepare() {
  CUTOVER_RETURN_IF_ERROR(RequireExecutable(options_.nginx, "nginx-light"));
  if (::access(options_.dav_ext_module.c_str(), R_OK) != 0) {
    return Status::Environment(options_.dav_ext_module +
                               " not found (install libnginx-mod-http-dav-ext)");
  }
  CUTOVER_RETURN_IF_ERROR(MakeDirs(root_));
  CUTOVER_RETURN_IF_ERROR(MakeDirs(dir_ + "/temp"));
  if (options_.tls && ::access(cert_path().c_str(), R_OK) != 0) {
    CUTOVER_RETURN_IF_ERROR(RequireExecutable("/usr/bin/openssl", "openssl"));
    ChildProcess openssl;
    CUTOVER_RETURN_IF_ERROR(openssl.Spawn(
        {"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
         "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout",
         dir_ + "/key.pem", "-out", cert_path()},
        dir_ + "/openssl.log"));
    auto deadline = steady_clock::now() + milliseconds(20000);
    while (openssl.Running() && steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    openssl.Stop();
    if (::access(cert_path().c_str(), R_OK) != 0) {
      Result<std::string> log = ReadFile(dir_ + "/openssl.log");
      return Status::Environment("openssl req failed: " + log.value_or(""));
    }
  }
  const std::string& d = dir_;
  std::ostringstream c;
  c << "load_module " << options_.dav_ext_module << ";\n";
  if (::geteuid() == 0) c << "user root;\n";
  c << "worker_processes 1;\n"
    << "daemon off;\n"
    << "master_process on;\n"
    << "pid " << d << "/nginx.pid;\n"
    << "error_log " << d << "/error.log info;\n"
    << "events { worker_connections 1024; }\n"
    << "http {\n"
    << "  access_log " << d << "/access.log;\n"
    << "  client_body_temp_path " << d << "/temp/body;\n"
    << "  proxy_temp_path " << d << "/temp/proxy;\n"
    << "  fastcgi_temp_path " << d << "/temp/fastcgi;\n"
    << "  uwsgi_temp_path " << d << "/temp/uwsgi;\n"
    << "  scgi_temp_path " << d << "/temp/scgi;\n"
    << options_.extra_http_config << "\n"
    << "  server {\n"
    << "    listen 127.0.0.1:" << port_ << (options_.tls ? " ssl" : "") << ";\n";
  if (options_.tls) {
    c << "    ssl_certificate " << cert_path() << ";\n"
      << "    ssl_certificate_key " << d << "/key.pem;\n";
  }
  c << "    root " << root_ << ";\n"
    << "    dav_methods PUT DELETE MKCOL COPY MOVE;\n"
    << "    dav_ext_methods PROPFIND OPTIONS;\n"
    << "    dav_access user:rw group:r all:r;\n"
    << "    create_full_put_path on;\n"
    << "    client_max_body_size 0;\n"
    << "    autoindex on;\n"
    << options_.extra_server_config << "\n"
    << "  }\n"
    << "}\n";
  return WriteText(d + "/nginx.conf", c.str());
}

std::vector<std::string> NginxDav::Argv() const {
  // -e: the startup error log, before the config's error_log is read (not /var/log/nginx).
  return {options_.nginx, "-p", dir_, "-c", dir_ + "/nginx.conf", "-e", dir_ + "/error.log"};
}

Status NginxDav::Ready() {
  if (!LoopbackPortOpen(port_)) return Status::Unavailable("port not open");
  return Status::Ok();
}

Status NginxDav::Reload() {
  if (!process_.Running()) return Status::FailedPrecondition("nginx is not running");
  CUTOVER_RETURN_IF_ERROR(Prepare());
  process_.Signal(SIGHUP);
  return Status::Ok();
}

// Haproxy ---------------------------------------------------------------------------------------

Haproxy::Haproxy(HaproxyOptions options) : TestServer("haproxy"), options_(std::move(options)) {
  log_path_ = dir_ + "/haproxy.log";
}

void Haproxy::PickPorts() {
  port_ = FreeLoopbackPort();
  do {
    metrics_port_ = FreeLoopbackPort();
  } while (metrics_port_ == port_);
}

std::string Haproxy::metrics_url() const {
  return "http://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics";
}

Status Haproxy::Prepare() {
  CUTOVER_RETURN_IF_ERROR(RequireExecutable(options_.haproxy, "haproxy"));
  std::ostringstream c;
  c << "global\n"
    << "  stats socket " << admin_socket() << " mode 600 level admin\n"
    << "  server-state-file " << dir_ << "/server-state\n"
    << "defaults\n"
    << "  mode http\n"
    << "  timeout connect 2s\n"
    << "  timeout client 30s\n"
    << "  timeout server 30s\n"
    << "  load-server-state-from-file global\n"
    << "frontend main\n"
    << "  bind 127.0.0.1:" << port_ << "\n"
    << "  default_backend " << options_.backend << "\n"
    << "frontend metrics\n"
    << "  bind 127.0.0.1:" << metrics_port_ << "\n"
    << "  http-request use-service prometheus-exporter if { path /metrics }\n"
    << "backend " << options_.backend << "\n"
    << "  balance " << options_.balance << "\n";
  for (const HaproxyServer& s : options_.servers) {
    c << "  server " << s.name << " " << s.address << " weight " << s.weight
      << (options_.health_checks ? " check inter 500ms" : "") << "\n";
  }
  return WriteText(dir_ + "/haproxy.cfg", c.str());
}

std::vector<std::string> Haproxy::Argv() const {
  return {options_.haproxy, "-W", "-db", "-f", dir_ + "/haproxy.cfg"};
}

Status Haproxy::Ready() {
  if (!LoopbackPortOpen(port_) || !LoopbackPortOpen(metrics_port_)) {
    return Status::Unavailable("ports not open");
  }
  return AdminCommand("show info").status();
}

Result<std::string> Haproxy::AdminCommand(const std::string& command) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = admin_socket();
  if (path.size() >= sizeof(addr.sun_path)) {
    ::close(fd);
    return Status::InvalidArgument("socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int e = errno;
    ::close(fd);
    return Status::Unavailable("connect " + path + ": " + std::strerror(e));
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string line = command + "\n";
  if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    int e = errno;
    ::close(fd);
    return Status::Unavailable("send to " + path + ": " + std::strerror(e));
  }
  std::string reply;
  char buf[8192];
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      reply.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      int e = errno;
      ::close(fd);
      return Status::Unavailable("recv from " + path + ": " + std::strerror(e));
    }
  }
  ::close(fd);
  return reply;
}

Result<int> Haproxy::WorkerPid() {
  CUTOVER_ASSIGN_OR_RETURN(std::string info, AdminCommand("show info"));
  size_t at = info.find("\nPid: ");
  if (at == std::string::npos) return Status::Unavailable("no Pid in show info");
  return std::atoi(info.c_str() + at + 6);
}

Status Haproxy::Reload(ReloadState state) {
  if (!process_.Running()) return Status::FailedPrecondition("haproxy is not running");
  CUTOVER_ASSIGN_OR_RETURN(int old_worker, WorkerPid());
  std::string state_file = dir_ + "/server-state";
  if (state == ReloadState::kKeep) {
    CUTOVER_ASSIGN_OR_RETURN(std::string servers, AdminCommand("show servers state"));
    CUTOVER_RETURN_IF_ERROR(WriteText(state_file, servers));
  } else {
    std::error_code ec;
    std::filesystem::remove(state_file, ec);
  }
  CUTOVER_RETURN_IF_ERROR(Prepare());
  // The master installs its signal handlers a little after the first worker answers, and a
  // SIGUSR2 that arrives before that is lost: send it again until a new worker answers.
  auto deadline = steady_clock::now() + start_timeout;
  auto next_signal = steady_clock::now();
  while (steady_clock::now() < deadline) {
    if (steady_clock::now() >= next_signal) {
      process_.Signal(SIGUSR2);
      next_signal = steady_clock::now() + milliseconds(500);
    }
    std::this_thread::sleep_for(milliseconds(20));
    Result<int> worker = WorkerPid();
    if (worker.ok() && *worker != old_worker && LoopbackPortOpen(port_)) return Status::Ok();
    if (!process_.Running()) break;
  }
  return Status::Unavailable("haproxy reload did not complete; log tail:\n" + LogTail());
}

// Prometheus ------------------------------------------------------------------------------------

Prometheus::Prometheus(PrometheusOptions options)
    : TestServer("prometheus"), options_(std::move(options)) {}

Status Prometheus::Prepare() {
  CUTOVER_RETURN_IF_ERROR(RequireExecutable(options_.prometheus, "prometheus"));
  std::ostringstream c;
  long ms = options_.scrape_interval.count();
  c << "global:\n"
    << "  scrape_interval: " << ms << "ms\n"
    << "  evaluation_interval: " << ms << "ms\n"
    << "  scrape_timeout: " << ms << "ms\n"
    << "scrape_configs:\n";
  for (const PrometheusJob& job : options_.jobs) {
    c << "  - job_name: '" << job.name << "'\n"
      << "    metrics_path: '" << job.metrics_path << "'\n"
      << "    static_configs:\n"
      << "      - targets: [";
    for (size_t i = 0; i < job.targets.size(); ++i) {
      c << (i > 0 ? ", " : "") << "'" << job.targets[i] << "'";
    }
    c << "]\n";
  }
  CUTOVER_RETURN_IF_ERROR(MakeDirs(dir_ + "/data"));
  return WriteText(dir_ + "/prometheus.yml", c.str());
}

std::vector<std::string> Prometheus::Argv() const {
  return {options_.prometheus,
          "--config.file=" + dir_ + "/prometheus.yml",
          "--storage.tsdb.path=" + dir_ + "/data",
          "--web.listen-address=127.0.0.1:" + std::to_string(port_),
          "--web.enable-lifecycle",
          "--log.level=warn"};
}

Status Prometheus::Ready() {
  HttpResponse r = HttpFetch({.url = url() + "/-/ready", .timeout_ms = 1000});
  if (r.status == 200) return Status::Ok();
  return Status::Unavailable("/-/ready: " +
                             (r.curl_code != 0 ? r.error : "HTTP " + std::to_string(r.status)));
}

// S3rver ----------------------------------------------------------------------------------------

S3rver::S3rver(S3rverOptions options) : TestServer("s3rver"), options_(std::move(options)) {
  script_ = options_.script.empty()
                ? SourceDirOrCwd() + "/tests/servers/node_modules/s3rver/bin/s3rver.js"
                : options_.script;
}

std::string S3rver::ObjectUrl(const std::string& key) const {
  return url() + "/" + options_.bucket + "/" + key;
}

Status S3rver::Prepare() {
  CUTOVER_RETURN_IF_ERROR(RequireExecutable(options_.node, "nodejs"));
  if (::access(script_.c_str(), R_OK) != 0) {
    return Status::Environment(script_ + " not found (run: npm ci --prefix tests/servers)");
  }
  return MakeDirs(dir_ + "/data");
}

std::vector<std::string> S3rver::Argv() const {
  // s3rver 3.7 makes list continuation tokens with DES, which OpenSSL 3 keeps in its legacy
  // provider: without the flag every truncated listing is a 500.
  return {options_.node, "--openssl-legacy-provider", script_, "--directory", dir_ + "/data",
          "--address", "127.0.0.1", "--port", std::to_string(port_), "--configure-bucket",
          options_.bucket};
}

Status S3rver::Ready() {
  if (!LoopbackPortOpen(port_)) return Status::Unavailable("port not open");
  // Signed like a client would, so a bucket listing answers 200 once the bucket exists.
  HttpResponse r = HttpFetch({.url = url() + "/" + options_.bucket,
                              .headers = {"x-amz-content-sha256: UNSIGNED-PAYLOAD"},
                              .aws_sigv4 = kSigV4,
                              .userpwd = std::string(kAccessKey) + ":" + kSecretKey,
                              .timeout_ms = 1000});
  if (r.status == 200) return Status::Ok();
  return Status::Unavailable("bucket listing: " +
                             (r.curl_code != 0 ? r.error : "HTTP " + std::to_string(r.status)));
}

}  // namespace cutover::testing
