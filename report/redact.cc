#include "report/redact.h"

#include <algorithm>
#include <regex>
#include <vector>

#include "core/sha256.h"
#include "core/strings.h"

namespace cutover::report {
namespace {

// A fixed key: pseudonyms are stable across runs; UUIDs are random, so a prefix reveals nothing.
constexpr char kHmacKey[] = "cutover.report/redact-1";

bool TokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

bool ContainsLower(std::string_view key, std::string_view part) {
  return AsciiLower(key).find(part) != std::string::npos;
}

}  // namespace

std::string Redactor::NameFor(const std::string& value, const std::string& kind) {
  auto it = names_.find(value);
  if (it != names_.end()) return it->second;
  std::string name;
  if (kind == "gpu" || kind == "mig") {
    std::string hex = HexEncode(HmacSha256(kHmacKey, value));
    name = (kind == "gpu" ? "GPU-" : "MIG-") + hex.substr(0, 12);
  } else {
    name = kind + "-" + std::to_string(++counters_[kind]);
  }
  names_[value] = name;
  return name;
}

void Redactor::Learn(const nlohmann::json& doc) {
  std::vector<std::pair<std::string, const nlohmann::json*>> stack = {{"", &doc}};
  while (!stack.empty()) {
    auto [key, node] = stack.back();
    stack.pop_back();
    if (node->is_object()) {
      for (auto it = node->begin(); it != node->end(); ++it) stack.push_back({it.key(), &*it});
    } else if (node->is_array()) {
      for (const nlohmann::json& v : *node) stack.push_back({key, &v});
    } else if (node->is_string()) {
      const std::string& s = node->get_ref<const std::string&>();
      if (s.empty()) continue;
      if (key == "hostname") {
        NameFor(s, "host");
        size_t dot = s.find('.');
        if (dot != std::string::npos && dot >= 3) NameFor(s.substr(0, dot), "host");
      } else if (key == "uuid") {
        NameFor(s, s.rfind("MIG-", 0) == 0 ? "mig" : "gpu");
      } else if (ContainsLower(key, "serial")) {
        NameFor(s, "serial");
      }
    }
  }
}

std::string Redactor::Replace(std::string_view in, bool ips) {
  std::string text(in);
  static const std::regex kUuid(R"((GPU|MIG)-[0-9A-Fa-f][0-9A-Fa-f-]{7,})");
  static const std::regex kIpv4(
      R"((^|[^0-9.])((25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3})(?![0-9.]))");
  std::string out;
  // UUID patterns first (they may not have been learned: an env value, a log message).
  {
    std::string acc;
    auto begin = std::sregex_iterator(text.begin(), text.end(), kUuid);
    size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      acc += text.substr(last, it->position() - last);
      acc += NameFor(it->str(), (*it)[1] == "MIG" ? "mig" : "gpu");
      last = it->position() + it->length();
    }
    text = acc + text.substr(last);
  }
  if (ips) {
    std::string acc;
    size_t last = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kIpv4);
         it != std::sregex_iterator(); ++it) {
      size_t pos = it->position(2);
      acc += text.substr(last, pos - last);
      acc += NameFor((*it)[2].str(), "ip");
      last = pos + (*it)[2].length();
    }
    text = acc + text.substr(last);
  }
  // Learned values, longest first, on token boundaries.
  std::vector<std::pair<std::string, std::string>> known(names_.begin(), names_.end());
  std::sort(known.begin(), known.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [value, name] : known) {
    size_t pos = 0;
    while ((pos = text.find(value, pos)) != std::string::npos) {
      size_t end = pos + value.size();
      bool left = pos == 0 || !TokenChar(text[pos - 1]) || text[pos - 1] == '.';
      bool right = end == text.size() || !TokenChar(text[end]) || text[end] == '.';
      if (left && right) {
        text.replace(pos, value.size(), name);
        pos += name.size();
      } else {
        pos = end;
      }
    }
  }
  return text;
}

std::string Redactor::ApplyText(std::string_view text) { return Replace(text, true); }

void Redactor::Apply(nlohmann::json& doc) {
  std::vector<std::pair<std::string, nlohmann::json*>> stack = {{"", &doc}};
  while (!stack.empty()) {
    auto [key, node] = stack.back();
    stack.pop_back();
    if (node->is_object()) {
      for (auto it = node->begin(); it != node->end(); ++it) stack.push_back({it.key(), &*it});
    } else if (node->is_array()) {
      for (nlohmann::json& v : *node) stack.push_back({key, &v});
    } else if (node->is_string()) {
      *node = Replace(node->get_ref<const std::string&>(), !ContainsLower(key, "version"));
    }
  }
}

}  // namespace cutover::report
