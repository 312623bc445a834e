#include "core/log.h"

#include <atomic>
#include <cctype>
#include <mutex>

#include <unistd.h>

namespace cutover {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
std::mutex g_sink_mu;
std::function<void(std::string_view)>* g_sink = nullptr;

const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
  }
  return "log";
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

constexpr std::string_view kRedacted = "[REDACTED]";

// Header-like "Name: value" pairs whose value runs to the end of the line.
bool IsSecretHeader(std::string_view name) {
  std::string u = Upper(name);
  return u == "AUTHORIZATION" || u == "PROXY-AUTHORIZATION" || u == "COOKIE" ||
         u == "SET-COOKIE" || u == "X-AMZ-SECURITY-TOKEN" || u == "X-API-KEY" ||
         IsSecretName(name);
}

}  // namespace

LogLevel ParseLogLevel(std::string_view name) {
  if (name == "error") return LogLevel::kError;
  if (name == "info") return LogLevel::kInfo;
  if (name == "debug") return LogLevel::kDebug;
  return LogLevel::kWarn;
}

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) <= g_level.load(); }

void SetLogSink(std::function<void(std::string_view)> sink) {
  std::lock_guard<std::mutex> lock(g_sink_mu);
  delete g_sink;
  g_sink = sink ? new std::function<void(std::string_view)>(std::move(sink)) : nullptr;
}

void Log(LogLevel level, std::string_view message) {
  if (!LogEnabled(level)) return;
  std::string line = "cutover ";
  line += LevelName(level);
  line += ": ";
  line += Redact(message);
  line += '\n';
  std::lock_guard<std::mutex> lock(g_sink_mu);
  if (g_sink != nullptr) {
    (*g_sink)(line);
  } else {
    (void)!::write(2, line.data(), line.size());
  }
}

bool IsSecretName(std::string_view name) {
  std::string u = Upper(name);
  for (char& c : u) {
    if (c == '-') c = '_';
  }
  if (u == "AUTHORIZATION" || u == "COOKIE") return true;
  static constexpr std::string_view kSuffixes[] = {"_KEY", "_SECRET", "_TOKEN", "_PASS",
                                                   "_PWD", "APIKEY", "SECRET", "TOKEN"};
  for (auto s : kSuffixes) {
    if (EndsWith(u, s)) return true;
  }
  static constexpr std::string_view kParts[] = {"PASSWORD", "PASSWD", "CREDENTIAL", "SECRET_",
                                                "PRIVATE_KEY", "ACCESS_KEY"};
  for (auto p : kParts) {
    if (u.find(p) != std::string::npos) return true;
  }
  return false;
}

std::string Redact(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    // A name: [A-Za-z0-9_-]+ followed by '=' or ':' (with optional spaces after ':').
    if (IsNameChar(in[i]) && (i == 0 || !IsNameChar(in[i - 1]))) {
      size_t j = i;
      while (j < in.size() && IsNameChar(in[j])) ++j;
      std::string_view name = in.substr(i, j - i);
      // scheme://user:password@host
      if (j + 2 < in.size() && in.compare(j, 3, "://") == 0) {
        size_t auth_start = j + 3;
        size_t end = auth_start;
        while (end < in.size() && in[end] != '/' && in[end] != ' ' && in[end] != '\n' &&
               in[end] != '"' && in[end] != '\'') {
          ++end;
        }
        size_t at = in.rfind('@', end == 0 ? 0 : end - 1);
        if (at != std::string_view::npos && at >= auth_start && at < end) {
          size_t colon = in.find(':', auth_start);
          if (colon != std::string_view::npos && colon < at) {
            out.append(in.substr(i, colon + 1 - i));
            out.append(kRedacted);
            i = at;
            continue;
          }
        }
      }
      if (j < in.size() && (in[j] == '=' || in[j] == ':')) {
        bool header = in[j] == ':';
        bool secret = header ? IsSecretHeader(name) : IsSecretName(name);
        // A quoted JSON key: "aws_secret_access_key": "..."
        if (secret) {
          out.append(name);
          out.push_back(in[j]);
          size_t k = j + 1;
          while (k < in.size() && (in[k] == ' ' || in[k] == '\t')) out.push_back(in[k++]);
          size_t end = k;
          if (header) {
            while (end < in.size() && in[end] != '\n' && in[end] != '\r') ++end;
          } else {
            while (end < in.size() && in[end] != ' ' && in[end] != '\n' && in[end] != '&' &&
                   in[end] != ',' && in[end] != ';' && in[end] != '"' && in[end] != '\'') {
              ++end;
            }
          }
          if (end > k) out.append(kRedacted);
          i = end;
          continue;
        }
      }
      // "name": "value" in JSON
      if (j + 1 < in.size() && in[j] == '"' && i > 0 && in[i - 1] == '"' && IsSecretName(name)) {
        size_t k = j + 1;
        while (k < in.size() && (in[k] == ' ' || in[k] == ':')) ++k;
        if (k < in.size() && in[k] == '"' && in[k - 1] != '"') {
          size_t end = in.find('"', k + 1);
          if (end != std::string_view::npos) {
            out.append(in.substr(i, k + 1 - i));
            out.append(kRedacted);
            i = end;
            continue;
          }
        }
      }
      out.append(name);
      i = j;
      continue;
    }
    out.push_back(in[i]);
    ++i;
  }
  return out;
}

}  // namespace cutover
