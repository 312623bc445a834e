#include "probe/parsers.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/strings.h"

namespace cutover::probe {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0' || c == '\v' || c == '\f';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Calls fn(line) for each line of `text` (without the newline).
template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    fn(text.substr(start, nl - start));
    start = nl + 1;
  }
}

std::string NormaliseDistName(std::string_view s) {
  std::string out = AsciiLower(s);
  for (char& c : out) {
    if (c == '-' || c == '.') c = '_';
  }
  return out;
}

// The longest prefix of `s` that is a dotted version (digits and dots, no trailing dot).
std::string_view LeadingVersion(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (IsDigit(s[i]) || s[i] == '.')) ++i;
  std::string_view v = s.substr(0, i);
  while (!v.empty() && v.back() == '.') v.remove_suffix(1);
  return v;
}

std::string Unquote(std::string_view v) {
  v = TrimField(v);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    v = v.substr(1, v.size() - 2);
  }
  return std::string(v);
}

}  // namespace

std::string_view TrimField(std::string_view s) {
  return TrimAny(s, std::string_view(" \t\n\r\v\f\0", 7));  // sysfs values may end in NUL
}

bool IsDottedVersion(std::string_view s) {
  if (s.empty() || !IsDigit(s.front()) || !IsDigit(s.back())) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (i + 1 < s.size() && s[i + 1] == '.') return false;
    } else if (!IsDigit(s[i])) {
      return false;
    }
  }
  return true;
}

int CompareVersions(std::string_view a, std::string_view b) {
  while (!a.empty() || !b.empty()) {
    auto take = [](std::string_view& s) -> unsigned long long {
      size_t dot = s.find('.');
      std::string_view part = s.substr(0, dot);
      s = dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
      unsigned long long v = 0;
      std::from_chars(part.data(), part.data() + part.size(), v);
      return v;
    };
    unsigned long long x = take(a);
    unsigned long long y = take(b);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::string VersionPrefix(std::string_view version, int n) {
  size_t pos = 0;
  for (int i = 0; i < n; ++i) {
    pos = version.find('.', pos);
    if (pos == std::string_view::npos) return std::string(version);
    if (i + 1 < n) ++pos;
  }
  return std::string(version.substr(0, pos));
}

std::map<std::string, std::string> ParseOsRelease(std::string_view text) {
  std::map<std::string, std::string> out;
  ForEachLine(text, [&](std::string_view line) {
    line = TrimField(line);
    if (line.empty() || line.front() == '#') return;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) return;
    std::string key(TrimField(line.substr(0, eq)));
    for (char c : key) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return;
    }
    out.emplace(std::move(key), Unquote(line.substr(eq + 1)));
  });
  return out;
}

Result<NvidiaProcVersion> ParseNvidiaProcVersion(std::string_view text) {
  std::optional<std::string_view> nvrm;
  ForEachLine(text, [&](std::string_view line) {
    if (!nvrm && TrimField(line).substr(0, 13) == "NVRM version:") nvrm = TrimField(line);
  });
  if (!nvrm) return Status::InvalidArgument("no NVRM version line");
  std::string_view rest = nvrm->substr(13);
  // The version is the first token after "Kernel Module" that looks like 123.45[.67].
  size_t km = rest.find("Kernel Module");
  if (km != std::string_view::npos) rest = rest.substr(km + 13);
  NvidiaProcVersion out;
  out.flavor = nvrm->find("Open Kernel Module") != std::string_view::npos ? "open" : "proprietary";
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && IsSpace(rest[i])) ++i;
    size_t j = i;
    while (j < rest.size() && !IsSpace(rest[j])) ++j;
    std::string_view tok = rest.substr(i, j - i);
    if (IsDottedVersion(tok) && tok.find('.') != std::string_view::npos) {
      out.version = std::string(tok);
      return out;
    }
    i = j;
  }
  return Status::InvalidArgument("no version number in the NVRM line");
}

std::map<std::string, std::string> ParseColonFields(std::string_view text) {
  std::map<std::string, std::string> out;
  ForEachLine(text, [&](std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view key = TrimField(line.substr(0, colon));
    if (key.empty()) return;
    out.emplace(std::string(key), std::string(TrimField(line.substr(colon + 1))));
  });
  return out;
}

CpuSummary ParseCpuInfo(std::string_view text) {
  CpuSummary out;
  ForEachLine(text, [&](std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view key = TrimField(line.substr(0, colon));
    std::string_view value = TrimField(line.substr(colon + 1));
    if (key == "processor") {
      ++out.logical_cpus;
    } else if (!out.model && (key == "model name" || key == "Model" || key == "cpu model") &&
               !value.empty()) {
      out.model = std::string(value);
    }
  });
  return out;
}

std::optional<uint64_t> ParseMemTotalMib(std::string_view text) {
  std::optional<uint64_t> out;
  ForEachLine(text, [&](std::string_view line) {
    if (out || line.substr(0, 9) != "MemTotal:") return;
    std::string_view v = TrimField(line.substr(9));
    uint64_t kb = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), kb);
    if (ec != std::errc() || p == v.data()) return;
    std::string_view unit = TrimField(std::string_view(p, v.data() + v.size() - p));
    if (unit == "kB" || unit.empty()) out = kb / 1024;
  });
  return out;
}

std::optional<int> PcieGenFromSpeed(std::string_view speed) {
  speed = TrimField(speed);
  double gts = 0;
  auto [p, ec] = std::from_chars(speed.data(), speed.data() + speed.size(), gts);
  if (ec != std::errc() || p == speed.data()) return std::nullopt;
  struct {
    double gts;
    int gen;
  } const kTable[] = {{2.5, 1}, {5, 2}, {8, 3}, {16, 4}, {32, 5}, {64, 6}, {128, 7}};
  for (const auto& row : kTable) {
    if (std::fabs(row.gts - gts) < 0.01) return row.gen;
  }
  return std::nullopt;
}

std::optional<long long> ParseInteger(std::string_view text) {
  return ParseDecimal<long long>(TrimField(text));  // probe's Trim: a trailing NUL too
}

std::optional<unsigned> ParseHex(std::string_view text) {
  text = TrimField(text);
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    text.remove_prefix(2);
  unsigned v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

std::optional<long long> HeaderDefine(std::string_view header, std::string_view name) {
  std::optional<long long> out;
  ForEachLine(header, [&](std::string_view line) {
    if (out) return;
    line = TrimField(line);
    if (line.empty() || line.front() != '#') return;
    line = TrimField(line.substr(1));
    if (line.substr(0, 6) != "define") return;
    line = TrimField(line.substr(6));
    if (line.substr(0, name.size()) != name) return;
    std::string_view rest = line.substr(name.size());
    if (rest.empty() || !IsSpace(rest.front())) return;
    rest = TrimField(rest);
    // Allow a trailing comment or a parenthesised number.
    if (!rest.empty() && rest.front() == '(') rest.remove_prefix(1);
    long long v = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
    if (ec != std::errc() || p == rest.data()) return;
    std::string_view tail = TrimField(std::string_view(p, rest.data() + rest.size() - p));
    if (!tail.empty() && tail.front() != '/' && tail.front() != ')' && tail.front() != 'L' &&
        tail.front() != 'U' && tail.front() != 'u' && tail.front() != 'l') {
      return;
    }
    out = v;
  });
  return out;
}

namespace {
std::optional<std::string> ThreePart(std::string_view header, std::string_view a,
                                     std::string_view b, std::string_view c) {
  auto x = HeaderDefine(header, a);
  auto y = HeaderDefine(header, b);
  auto z = HeaderDefine(header, c);
  if (!x || !y || *x < 0 || *y < 0) return std::nullopt;
  std::string v = std::to_string(*x) + "." + std::to_string(*y);
  if (z && *z >= 0) v += "." + std::to_string(*z);
  return v;
}
}  // namespace

std::optional<std::string> ParseCudnnHeader(std::string_view header) {
  return ThreePart(header, "CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL");
}
std::optional<std::string> ParseNcclHeader(std::string_view header) {
  return ThreePart(header, "NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH");
}
std::optional<std::string> ParseCublasHeader(std::string_view header) {
  return ThreePart(header, "CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH");
}
std::optional<std::string> ParseTensorrtHeader(std::string_view header) {
  return ThreePart(header, "NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH");
}

std::optional<std::string> ParseCudaHeader(std::string_view header) {
  auto v = HeaderDefine(header, "CUDA_VERSION");
  if (!v || *v < 1000 || *v > 1000000) return std::nullopt;
  return std::to_string(*v / 1000) + "." + std::to_string((*v % 1000) / 10);
}

std::optional<std::string> ParseToolkitVersionJson(std::string_view text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  auto cuda = doc.find("cuda");
  if (cuda == doc.end() || !cuda->is_object()) return std::nullopt;
  auto v = cuda->find("version");
  if (v == cuda->end() || !v->is_string()) return std::nullopt;
  std::string s = v->get<std::string>();
  if (!IsDottedVersion(s)) return std::nullopt;
  return s;
}

std::optional<std::string> ParseToolkitVersionTxt(std::string_view text) {
  size_t at = text.find("CUDA Version");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view v = LeadingVersion(TrimField(text.substr(at + 12)));
  if (!IsDottedVersion(v)) return std::nullopt;
  return std::string(v);
}

std::optional<std::string> ParseNvccVersion(std::string_view text) {
  size_t at = text.find(", V");
  if (at != std::string_view::npos) {
    std::string_view v = LeadingVersion(text.substr(at + 3));
    if (IsDottedVersion(v)) return std::string(v);
  }
  at = text.find("release ");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view v = LeadingVersion(text.substr(at + 8));
  if (!IsDottedVersion(v)) return std::nullopt;
  return std::string(v);
}

std::optional<LibraryFileName> ParseLibraryFileName(std::string_view name) {
  if (name.substr(0, 3) != "lib") return std::nullopt;
  size_t so = name.find(".so");
  if (so == std::string_view::npos || so <= 3) return std::nullopt;
  std::string_view tail = name.substr(so + 3);
  LibraryFileName out;
  out.stem = std::string(name.substr(3, so - 3));
  if (tail.empty()) return out;
  if (tail.front() != '.') return std::nullopt;
  tail.remove_prefix(1);
  if (!IsDottedVersion(tail)) return std::nullopt;
  out.version = std::string(tail);
  return out;
}

namespace {

// "<name>-<version><suffix>" -> name (normalised) and version; nullopt without the suffix or a
// dash.
std::optional<DistInfoName> SplitMetadataName(std::string_view dir, std::string_view suffix) {
  if (dir.size() <= suffix.size() || dir.substr(dir.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  dir.remove_suffix(suffix.size());
  size_t dash = dir.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 >= dir.size()) return std::nullopt;
  DistInfoName out;
  out.name = NormaliseDistName(dir.substr(0, dash));
  out.version = std::string(dir.substr(dash + 1));
  return out;
}

}  // namespace

std::optional<DistInfoName> ParseDistInfoName(std::string_view dir) {
  return SplitMetadataName(dir, ".dist-info");
}

std::optional<DistInfoName> ParseEggInfoName(std::string_view name) {
  auto out = SplitMetadataName(name, ".egg-info");
  if (!out) return std::nullopt;
  // Eggs built by setuptools may carry the interpreter: "1.0-py3.11".
  size_t py = out->version.rfind("-py");
  if (py != std::string::npos && py > 0) out->version.resize(py);
  return out;
}

PythonMetadata ParsePythonMetadata(std::string_view text) {
  PythonMetadata out;
  bool in_headers = true;
  ForEachLine(text, [&](std::string_view line) {
    if (!in_headers) return;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      in_headers = false;  // the body (description) follows the first blank line
      return;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || IsSpace(line.front())) return;
    std::string_view key = line.substr(0, colon);
    std::string value(TrimField(line.substr(colon + 1)));
    if (key == "Name" && !out.name) {
      out.name = value;
    } else if (key == "Version" && !out.version) {
      out.version = value;
    } else if (key == "Requires-Dist") {
      out.requires_dist.push_back(value);
    }
  });
  return out;
}

std::optional<std::string> PythonStringValue(std::string_view text, std::string_view name) {
  std::optional<std::string> out;
  ForEachLine(text, [&](std::string_view line) {
    if (out) return;
    size_t pos = 0;
    while ((pos = line.find(name, pos)) != std::string_view::npos) {
      size_t start = pos;
      size_t end = pos + name.size();
      pos = end;
      // A whole identifier, or a quoted dict key.
      bool quoted = start > 0 && (line[start - 1] == '\'' || line[start - 1] == '"');
      if (!quoted && start > 0 &&
          (std::isalnum(static_cast<unsigned char>(line[start - 1])) || line[start - 1] == '_' ||
           line[start - 1] == '.')) {
        continue;
      }
      if (quoted) {
        if (end >= line.size() || line[end] != line[start - 1]) continue;
        ++end;
      } else if (end < line.size() &&
                 (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_')) {
        continue;
      }
      std::string_view rest = TrimField(line.substr(end));
      if (quoted) {
        if (rest.empty() || rest.front() != ':') continue;
        rest = TrimField(rest.substr(1));
      } else {
        if (!rest.empty() && rest.front() == ':') {  // a type annotation
          size_t eq = rest.find('=');
          if (eq == std::string_view::npos) continue;
          rest = rest.substr(eq);
        }
        if (rest.empty() || rest.front() != '=' || (rest.size() > 1 && rest[1] == '=')) continue;
        rest = TrimField(rest.substr(1));
      }
      if (rest.empty() || (rest.front() != '\'' && rest.front() != '"')) return;  // None etc.
      char q = rest.front();
      size_t close = rest.find(q, 1);
      if (close == std::string_view::npos) return;
      out = std::string(rest.substr(1, close - 1));
      return;
    }
  });
  return out;
}

std::optional<std::string> RequirementVersion(std::string_view req) {
  size_t semi = req.find(';');
  req = req.substr(0, semi);
  for (std::string_view op : {"==", ">="}) {
    size_t at = req.find(op);
    if (at == std::string_view::npos) continue;
    std::string_view rest = TrimField(req.substr(at + 2));
    size_t end = 0;
    while (end < rest.size() &&
           (IsDigit(rest[end]) || rest[end] == '.' || rest[end] == '*' ||
            std::isalpha(static_cast<unsigned char>(rest[end])) || rest[end] == '+')) {
      ++end;
    }
    std::string v(rest.substr(0, end));
    while (!v.empty() && (v.back() == '.' || v.back() == '*')) v.pop_back();
    if (!v.empty()) return v;
  }
  return std::nullopt;
}

std::string RequirementName(std::string_view req) {
  req = TrimField(req);
  size_t end = 0;
  while (end < req.size() && (std::isalnum(static_cast<unsigned char>(req[end])) ||
                              req[end] == '-' || req[end] == '_' || req[end] == '.')) {
    ++end;
  }
  return NormaliseDistName(req.substr(0, end));
}

std::optional<std::string> CudaFromLocalVersion(std::string_view version) {
  size_t at = version.find("+cu");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view digits = version.substr(at + 3);
  size_t n = 0;
  while (n < digits.size() && IsDigit(digits[n])) ++n;
  digits = digits.substr(0, n);
  if (digits.size() < 2 || digits.size() > 4) return std::nullopt;
  // cu118 -> 11.8, cu121 -> 12.1, cu92 -> 9.2, cu130 -> 13.0
  std::string_view major = digits.size() == 2 ? digits.substr(0, 1) : digits.substr(0, 2);
  std::string_view minor = digits.substr(major.size());
  return std::string(major) + "." + std::string(minor);
}

std::vector<std::string> ParseProcModules(std::string_view text) {
  std::vector<std::string> out;
  ForEachLine(text, [&](std::string_view line) {
    line = TrimField(line);
    size_t sp = line.find(' ');
    std::string_view name = line.substr(0, sp);
    if (!name.empty()) out.emplace_back(name);
  });
  return out;
}

std::optional<std::string> GlibcVersionFromLibc(std::string_view bytes) {
  constexpr std::string_view kMarker = "release version ";
  size_t at = bytes.find("GNU C Library");
  if (at == std::string_view::npos) return std::nullopt;
  size_t rel = bytes.find(kMarker, at);
  if (rel == std::string_view::npos || rel - at > 512) return std::nullopt;
  std::string_view v = LeadingVersion(bytes.substr(rel + kMarker.size(), 16));
  if (!IsDottedVersion(v)) return std::nullopt;
  return std::string(v);
}

std::optional<std::string> GlibcVersionFromFileName(std::string_view name) {
  if (name.substr(0, 5) != "libc-") return std::nullopt;
  size_t so = name.rfind(".so");
  if (so == std::string_view::npos || so <= 5) return std::nullopt;
  std::string_view v = name.substr(5, so - 5);
  if (!IsDottedVersion(v)) return std::nullopt;
  return std::string(v);
}

std::map<std::string, std::string> DpkgVersions(std::string_view status, std::string_view prefix) {
  std::map<std::string, std::string> out;
  std::string package, version;
  bool installed = false;
  auto flush = [&] {
    if (!package.empty() && installed && !version.empty() &&
        package.compare(0, prefix.size(), prefix) == 0) {
      std::string v = version;
      size_t colon = v.find(':');
      if (colon != std::string::npos) v = v.substr(colon + 1);
      size_t dash = v.rfind('-');
      if (dash != std::string::npos) v = v.substr(0, dash);
      out[package] = v;
    }
    package.clear();
    version.clear();
    installed = false;
  };
  ForEachLine(status, [&](std::string_view line) {
    if (TrimField(line).empty()) return flush();
    if (line.substr(0, 8) == "Package:") package = std::string(TrimField(line.substr(8)));
    if (line.substr(0, 8) == "Version:") version = std::string(TrimField(line.substr(8)));
    if (line.substr(0, 7) == "Status:") {
      installed = line.find("installed") != std::string_view::npos &&
                  line.find("not-installed") == std::string_view::npos &&
                  line.find("config-files") == std::string_view::npos;
    }
  });
  flush();
  return out;
}

}  // namespace cutover::probe
