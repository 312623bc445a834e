#include "canary/haproxy_traffic.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "core/strings.h"

namespace cutover::canary {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(line.substr(start));
      break;
    }
    out.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

int64_t ToInt(std::string_view s) {
  s = Trim(s);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0) return 0;
  return v;
}

// Closes a file descriptor on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<std::vector<StatRow>> ParseShowStat(std::string_view csv) {
  std::map<std::string, size_t, std::less<>> column;
  bool have_header = false;
  std::vector<StatRow> rows;
  size_t pos = 0;
  while (pos <= csv.size()) {
    size_t nl = csv.find('\n', pos);
    std::string_view line =
        csv.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? csv.size() + 1 : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line.front() == '#') {
      if (have_header) continue;
      line.remove_prefix(1);
      std::vector<std::string_view> names = SplitFields(line);
      for (size_t i = 0; i < names.size(); ++i) {
        std::string name(Trim(names[i]));
        if (!name.empty() && column.count(name) == 0) column.emplace(std::move(name), i);
      }
      if (column.count("pxname") == 0 || column.count("svname") == 0) {
        return Status::InvalidArgument("show stat: header names no pxname and svname columns");
      }
      have_header = true;
      continue;
    }
    if (!have_header) {
      return Status::InvalidArgument("show stat: a row before the '# pxname,svname,...' header");
    }
    std::vector<std::string_view> f = SplitFields(line);
    auto get = [&](std::string_view name) -> std::string_view {
      auto it = column.find(name);
      if (it == column.end() || it->second >= f.size()) return {};
      return f[it->second];
    };
    size_t px = column.find("pxname")->second;
    size_t sv = column.find("svname")->second;
    if (px >= f.size() || sv >= f.size()) continue;
    StatRow row;
    row.proxy = std::string(f[px]);
    row.server = std::string(f[sv]);
    int64_t responses = 0;
    for (std::string_view c :
         {"hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx", "hrsp_5xx", "hrsp_other"}) {
      int64_t v = ToInt(get(c));
      if (v > INT64_MAX - responses) v = INT64_MAX - responses;
      responses += v;
    }
    row.counters.responses = responses;
    row.counters.errors_5xx = ToInt(get("hrsp_5xx"));
    row.counters.sessions = ToInt(get("stot"));
    row.counters.status = std::string(get("status"));
    rows.push_back(std::move(row));
  }
  if (!have_header) return Status::InvalidArgument("show stat: no '# pxname,svname,...' header");
  return rows;
}

Result<int> ParseGetWeight(std::string_view reply) {
  std::string_view t = Trim(reply);
  size_t end = 0;
  while (end < t.size() && t[end] >= '0' && t[end] <= '9') ++end;
  std::string_view rest = Trim(t.substr(end));
  int v = 0;
  if (end > 0 && end <= 3) std::from_chars(t.data(), t.data() + end, v);
  if (end == 0 || end > 3 || v > 256 || (!rest.empty() && rest.substr(0, 9) != "(initial ")) {
    // Quote the first line only, and not all of a long one: the message stays one line.
    std::string_view quoted = t.substr(0, std::min(t.find('\n'), size_t{80}));
    return Status::InvalidArgument("haproxy: get weight: unexpected reply '" + std::string(quoted) +
                                   "'");
  }
  return v;
}

std::map<std::string, std::string> ParseShowInfo(std::string_view text) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    out[std::string(Trim(line.substr(0, colon)))] = std::string(Trim(line.substr(colon + 1)));
  }
  return out;
}

HaproxyTraffic::HaproxyTraffic(HaproxyTrafficOptions options) : options_(std::move(options)) {}

Result<std::string> HaproxyTraffic::Command(const std::string& command) {
  const std::string where = options_.socket.empty() ? options_.address : options_.socket;
  const std::string prefix = "haproxy runtime API " + where + ": ";
  auto deadline = steady_clock::now() + options_.timeout;
  Fd fd;
  if (!options_.socket.empty()) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (options_.socket.size() >= sizeof(addr.sun_path)) {
      return Status::InvalidArgument(prefix + "socket path too long");
    }
    std::memcpy(addr.sun_path, options_.socket.c_str(), options_.socket.size() + 1);
    fd.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd.fd < 0) return Status::IoError(prefix + "socket: " + std::strerror(errno));
    if (::connect(fd.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      return Status::Unavailable(prefix + "connect: " + std::strerror(errno));
    }
  } else {
    size_t colon = options_.address.rfind(':');
    if (colon == std::string::npos) {
      return Status::InvalidArgument(prefix + "address must be host:port");
    }
    std::string host = options_.address.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), options_.address.c_str() + colon + 1, &hints, &res);
    if (rc != 0) return Status::Unavailable(prefix + gai_strerror(rc));
    Status last = Status::Unavailable(prefix + "no address");
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      int s = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (s < 0) continue;
      if (::connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
        fd.fd = s;
        break;
      }
      last = Status::Unavailable(prefix + "connect: " + std::strerror(errno));
      ::close(s);
    }
    ::freeaddrinfo(res);
    if (fd.fd < 0) return last;
  }
  std::string line = command + "\n";
  size_t sent = 0;
  while (sent < line.size()) {
    ssize_t n = ::send(fd.fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Unavailable(prefix + "send: " + std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[16384];
  while (true) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now()).count();
    if (left <= 0)
      return Status::DeadlineExceeded(prefix + "no complete reply to '" + command + "'");
    pollfd p{fd.fd, POLLIN, 0};
    int pr = ::poll(&p, 1, static_cast<int>(left));
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) return Status::Unavailable(prefix + "poll: " + std::strerror(errno));
    if (pr == 0) continue;
    ssize_t n = ::recv(fd.fd, buf, sizeof buf, 0);
    if (n > 0) {
      reply.append(buf, static_cast<size_t>(n));
      if (reply.size() > (64u << 20)) return Status::Unavailable(prefix + "reply over 64 MiB");
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      return Status::Unavailable(prefix + "recv: " + std::strerror(errno));
    }
  }
  return reply;
}

Status HaproxyTraffic::SetWeights(const Weights& weights) {
  for (const auto& [server, w] : weights) {
    if (w < 0 || w > kMaxServerWeight) {
      return Status::InvalidArgument("haproxy: weight for " + server + " must be 0..256, got " +
                                     std::to_string(w));
    }
  }
  CUTOVER_ASSIGN_OR_RETURN(Weights now, ReadWeights([&] {
                             std::vector<std::string> names;
                             for (const auto& [s, w] : weights) names.push_back(s);
                             return names;
                           }()));
  // Raises first, then lowers: the backend never has every server at 0 in between.
  std::vector<std::pair<std::string, int>> order;
  for (const auto& [s, w] : weights) {
    if (w > now[s]) order.emplace_back(s, w);
  }
  for (const auto& [s, w] : weights) {
    if (w < now[s]) order.emplace_back(s, w);
  }
  for (const auto& [s, w] : order) {
    std::string cmd = "set weight " + options_.backend + "/" + s + " " + std::to_string(w);
    CUTOVER_ASSIGN_OR_RETURN(std::string reply, Command(cmd));
    std::string_view t = Trim(reply);
    if (!t.empty()) return Status::FailedPrecondition("haproxy: " + cmd + ": " + std::string(t));
  }
  return Status::Ok();
}

Result<Weights> HaproxyTraffic::ReadWeights(const std::vector<std::string>& servers) {
  Weights out;
  for (const std::string& s : servers) {
    std::string cmd = "get weight " + options_.backend + "/" + s;
    CUTOVER_ASSIGN_OR_RETURN(std::string reply, Command(cmd));
    Result<int> w = ParseGetWeight(reply);
    if (!w.ok()) {
      return Status::FailedPrecondition("haproxy: " + cmd + ": " + std::string(Trim(reply)));
    }
    out[s] = *w;
  }
  return out;
}

Result<std::map<std::string, ServerCounters>> HaproxyTraffic::ReadCounters() {
  CUTOVER_ASSIGN_OR_RETURN(std::string csv, Command("show stat"));
  CUTOVER_ASSIGN_OR_RETURN(std::vector<StatRow> rows, ParseShowStat(csv));
  std::map<std::string, ServerCounters> out;
  bool found = false;
  for (StatRow& r : rows) {
    if (r.proxy != options_.backend) continue;
    found = true;
    if (r.server == "BACKEND" || r.server == "FRONTEND") continue;
    out[r.server] = std::move(r.counters);
  }
  if (!found) {
    return Status::FailedPrecondition("haproxy: show stat: no backend '" + options_.backend + "'");
  }
  return out;
}

Result<std::string> HaproxyTraffic::Generation() {
  CUTOVER_ASSIGN_OR_RETURN(std::string info, Command("show info"));
  auto fields = ParseShowInfo(info);
  auto it = fields.find("Pid");
  if (it == fields.end()) return Status::Unavailable("haproxy: show info has no Pid");
  return "pid " + it->second;
}

}  // namespace cutover::canary
