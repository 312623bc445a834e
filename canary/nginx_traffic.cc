#include "canary/nginx_traffic.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/file_util.h"
#include "core/subprocess.h"

namespace cutover::canary {
namespace {

constexpr int kMaxNginxWeight = 1000000;

Status Bad(const std::string& what) { return Status::InvalidArgument("nginx upstream file: " + what); }

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// `text` with every comment (from '#' outside quotes to the end of its line) blanked, so that
// positions stay those of the original.
std::string BlankComments(std::string_view text) {
  std::string out(text);
  char quote = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    if (quote != 0) {
      if (c == '\\' && i + 1 < out.size()) {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    }
  }
  return out;
}

std::vector<std::string> Tokens(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    size_t start = i;
    while (i < s.size() && !IsSpace(s[i])) ++i;
    if (i > start) out.emplace_back(s.substr(start, i - start));
  }
  return out;
}

bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
}

// Where `upstream <name> {` starts in `masked`, and where its '{' is.
bool FindBlock(const std::string& masked, const std::string& name, size_t* start, size_t* brace) {
  size_t pos = 0;
  while ((pos = masked.find("upstream", pos)) != std::string::npos) {
    size_t p = pos + 8;
    bool boundary = (pos == 0 || !IsWordChar(masked[pos - 1])) && p < masked.size() &&
                    IsSpace(masked[p]);
    if (boundary) {
      while (p < masked.size() && IsSpace(masked[p])) ++p;
      if (masked.compare(p, name.size(), name) == 0) {
        size_t q = p + name.size();
        if (q < masked.size() && !IsWordChar(masked[q])) {
          while (q < masked.size() && IsSpace(masked[q])) ++q;
          if (q < masked.size() && masked[q] == '{') {
            *start = pos;
            *brace = q;
            return true;
          }
        }
      }
    }
    pos += 8;
  }
  return false;
}

Result<UpstreamServer> ParseServer(const std::vector<std::string>& tokens) {
  if (tokens.size() < 2) return Bad("a server line without an address");
  UpstreamServer s;
  s.address = tokens[1];
  bool down = false;
  for (size_t i = 2; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (t.rfind("weight=", 0) == 0) {
      std::string v = t.substr(7);
      char* end = nullptr;
      long w = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || w < 1 || w > kMaxNginxWeight) {
        return Bad("server " + s.address + ": bad " + t.substr(0, 40));
      }
      s.weight = static_cast<int>(w);
    } else if (t == "down") {
      down = true;
    } else {
      s.params.push_back(t);
    }
  }
  if (down) s.weight = 0;
  return s;
}

// ": <the line that says why>" of a command's output: nginx's first [emerg] or [alert] line
// (its last line only says the test failed), else the last non-empty line; "" when silent.
std::string ImportantLine(const std::string& output) {
  std::string last;
  size_t pos = 0;
  while (pos < output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string::npos) end = output.size();
    std::string line = output.substr(pos, std::min<size_t>(end - pos, 300));
    pos = end + 1;
    if (line.find("[emerg]") != std::string::npos || line.find("[alert]") != std::string::npos) {
      return ": " + line;
    }
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last.empty() ? "" : ": " + last;
}

}  // namespace

Result<UpstreamBlock> ParseUpstream(std::string_view text, const std::string& name) {
  const std::string masked = BlankComments(text);
  size_t start = 0, brace = 0;
  if (name.empty() || !FindBlock(masked, name, &start, &brace)) {
    return Bad("no 'upstream " + name + " {' block");
  }
  UpstreamBlock b;
  b.name = name;
  b.before = std::string(text.substr(0, start));
  size_t i = brace + 1;
  size_t stmt = i;
  for (; i < masked.size(); ++i) {
    char c = masked[i];
    if (c == '{') return Bad("a nested block inside upstream " + name);
    if (c == ';' || c == '}') {
      std::vector<std::string> tokens = Tokens(std::string_view(masked).substr(stmt, i - stmt));
      if (c == '}' && !tokens.empty()) return Bad("a statement without ';' in upstream " + name);
      if (!tokens.empty()) {
        UpstreamBlock::Statement s;
        if (tokens[0] == "server") {
          s.is_server = true;
          CUTOVER_ASSIGN_OR_RETURN(s.server, ParseServer(tokens));
        } else {
          for (const std::string& t : tokens) s.text += (s.text.empty() ? "" : " ") + t;
        }
        b.statements.push_back(std::move(s));
      }
      stmt = i + 1;
      if (c == '}') break;
    }
  }
  if (i >= masked.size()) return Bad("upstream " + name + " has no closing '}'");
  b.after = std::string(text.substr(i + 1));
  return b;
}

std::string RenderUpstream(const UpstreamBlock& b) {
  std::string out = b.before + "upstream " + b.name + " {\n";
  for (const UpstreamBlock::Statement& s : b.statements) {
    if (!s.is_server) {
      out += "    " + s.text + ";\n";
      continue;
    }
    out += "    server " + s.server.address;
    out += s.server.weight > 0 ? " weight=" + std::to_string(s.server.weight) : " down";
    for (const std::string& p : s.server.params) out += " " + p;
    out += ";\n";
  }
  out += "}";
  out += b.after;
  if (out.back() != '\n') out += "\n";
  return out;
}

Weights UpstreamWeights(const UpstreamBlock& b) {
  Weights w;
  for (const auto& s : b.statements) {
    if (s.is_server) w[s.server.address] = s.server.weight;
  }
  return w;
}

NginxTraffic::NginxTraffic(NginxTrafficOptions options) : options_(std::move(options)) {}

Result<UpstreamBlock> NginxTraffic::Load(std::string* text) {
  CUTOVER_ASSIGN_OR_RETURN(std::string read, ReadFile(options_.upstream_file));
  Result<UpstreamBlock> b = ParseUpstream(read, options_.upstream);
  if (!b.ok()) return Status(b.status().code(), options_.upstream_file + ": " + b.status().message());
  if (text != nullptr) *text = std::move(read);
  return b;
}

Status NginxTraffic::Run(const std::string& what, const std::string& command) {
  Result<ProgramOutput> out =
      RunProgramForStatus({"/bin/sh", "-c", command}, static_cast<int>(options_.timeout.count()));
  const std::string prefix = "nginx: " + what + " '" + command + "' failed: ";
  if (!out.ok()) return Status::FailedPrecondition(prefix + out.status().message());
  if (out->exit_status == 0) return Status::Ok();
  return Status::FailedPrecondition(prefix + "exit status " + std::to_string(out->exit_status) +
                                    ImportantLine(out->output));
}

Status NginxTraffic::SetWeights(const Weights& weights) {
  std::string old_text;
  CUTOVER_ASSIGN_OR_RETURN(UpstreamBlock b, Load(&old_text));
  for (const auto& [server, weight] : weights) {
    if (weight < 0 || weight > kMaxNginxWeight) {
      return Status::InvalidArgument("nginx: weight " + std::to_string(weight) + " for " + server +
                                     " outside 0.." + std::to_string(kMaxNginxWeight));
    }
    bool found = false;
    for (auto& s : b.statements) {
      if (s.is_server && s.server.address == server) {
        s.server.weight = weight;
        found = true;
      }
    }
    if (!found) {
      return Status::FailedPrecondition("nginx: upstream " + options_.upstream + " in " +
                                        options_.upstream_file + " has no server " + server);
    }
  }
  struct stat st;
  mode_t mode = ::stat(options_.upstream_file.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  CUTOVER_RETURN_IF_ERROR(WriteFileAtomic(options_.upstream_file, RenderUpstream(b), mode));
  Status s = Run("test_command", options_.test_command);
  if (s.ok()) s = Run("reload_command", options_.reload_command);
  if (!s.ok()) {
    Status restored = WriteFileAtomic(options_.upstream_file, old_text, mode);
    if (!restored.ok()) {
      return Status::IoError(s.message() + "; restoring " + options_.upstream_file +
                             " failed too: " + restored.message());
    }
  }
  return s;
}

Status NginxTraffic::CheckReady() { return Run("test_command", options_.test_command); }

Result<Weights> NginxTraffic::ReadWeights(const std::vector<std::string>& servers) {
  CUTOVER_ASSIGN_OR_RETURN(UpstreamBlock b, Load());
  Weights all = UpstreamWeights(b);
  Weights out;
  for (const std::string& s : servers) {
    auto it = all.find(s);
    if (it == all.end()) {
      return Status::NotFound("nginx: upstream " + options_.upstream + " in " +
                              options_.upstream_file + " has no server " + s);
    }
    out[s] = it->second;
  }
  return out;
}

Result<std::map<std::string, ServerCounters>> NginxTraffic::ReadCounters() {
  return Status::Unimplemented(
      "nginx keeps no per-server counters (the rollback is confirmed from prometheus)");
}

Result<std::string> NginxTraffic::Generation() { return std::string(); }

}  // namespace cutover::canary
