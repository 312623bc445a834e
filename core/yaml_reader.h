// Reading YAML documents (policies, rollout specs, cost files) with errors that say where: a
// walker over yaml-cpp nodes that checks keys and types, and collects every problem with its
// file, line, column and dotted path, so one run of a bad file lists all its mistakes.
//
//   yaml::Reader r("policy.yaml");
//   if (r.Map(root, "", kTopKeys)) name = r.String(root, "", "name", /*required=*/true);
//   CUTOVER_RETURN_IF_ERROR(r.ErrorStatus());  // "policy.yaml:3:1: nmae: unknown key (...)"
//
// Thread-safety: a Reader is used by one thread.
#ifndef CUTOVER_CORE_YAML_READER_H_
#define CUTOVER_CORE_YAML_READER_H_

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/status.h"

namespace cutover::yaml {

// "a, b, c".
inline std::string JoinKeys(std::span<const std::string_view> keys) {
  std::string out;
  for (std::string_view k : keys) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

inline std::string Sub(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

inline std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// Walks a YAML tree, collecting errors with their marks ("FILE:LINE:COL: a.b[2].c: message").
// Every accessor reports its own error and returns nullopt, so one pass finds every problem.
class Reader {
 public:
  explicit Reader(std::string_view file) : file_(file) {}

  const std::vector<std::string>& errors() const { return errors_; }
  // The file name errors are reported under.
  const std::string& file() const { return file_; }

  // OK when no error was collected, else InvalidArgument holding every error, one a line.
  Status ErrorStatus() const {
    if (errors_.empty()) return Status::Ok();
    std::string all;
    for (const std::string& e : errors_) all += (all.empty() ? "" : "\n") + e;
    return Status::InvalidArgument(all);
  }

  void Error(const YAML::Mark& mark, const std::string& path, const std::string& msg) {
    std::string where = file_;
    if (mark.line >= 0) {
      where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
    }
    errors_.push_back(where + ": " + (path.empty() ? msg : path + ": " + msg));
  }
  void Error(const YAML::Node& node, const std::string& path, const std::string& msg) {
    Error(node.Mark(), path, msg);
  }

  // True when `node` is a mapping; reports unknown and duplicate keys.
  bool Map(const YAML::Node& node, const std::string& path,
           std::span<const std::string_view> allowed) {
    if (!node.IsMap()) {
      Error(node, path, "must be a mapping");
      return false;
    }
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const YAML::Node key = kv.first;
      std::string k = key.IsScalar() ? key.Scalar() : "?";
      if (!key.IsScalar()) {
        Error(key, path, "keys must be plain names");
      } else if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        Error(key, Sub(path, k), "unknown key (expected one of: " + JoinKeys(allowed) + ")");
      } else if (!seen.insert(k).second) {
        Error(key, Sub(path, k), "duplicate key");
      }
    }
    return true;
  }

  // The value under `key`, or an undefined node. Reports a missing required key at `map`.
  YAML::Node Get(const YAML::Node& map, const std::string& path, const char* key, bool required) {
    YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) {
      if (required) Error(map, Sub(path, key), "required");
      return YAML::Node(YAML::NodeType::Undefined);
    }
    return v;
  }

  std::optional<std::string> String(const YAML::Node& map, const std::string& path, const char* key,
                                    bool required) {
    YAML::Node v = Get(map, path, key, required);
    if (!v.IsDefined()) return std::nullopt;
    if (!v.IsScalar()) {
      Error(v, Sub(path, key), "must be a string");
      return std::nullopt;
    }
    if (v.Scalar().empty()) {
      Error(v, Sub(path, key), "must not be empty");
      return std::nullopt;
    }
    return v.Scalar();
  }

  std::optional<double> Number(const YAML::Node& map, const std::string& path, const char* key,
                               bool required) {
    YAML::Node v = Get(map, path, key, required);
    if (!v.IsDefined()) return std::nullopt;
    if (Quoted(v)) {
      Error(v, Sub(path, key), "must be a number, got the string \"" + v.Scalar() + "\"");
      return std::nullopt;
    }
    double d = 0;
    bool ok = v.IsScalar() && YAML::convert<double>::decode(v, d);
    if (!ok || !std::isfinite(d)) {
      Error(v, Sub(path, key), "must be a finite number, got " + Show(v));
      return std::nullopt;
    }
    return d;
  }

  std::optional<int64_t> Int(const YAML::Node& map, const std::string& path, const char* key,
                             bool required, int64_t lo, int64_t hi) {
    YAML::Node v = Get(map, path, key, required);
    if (!v.IsDefined()) return std::nullopt;
    if (Quoted(v)) {
      Error(v, Sub(path, key), "must be an integer, got the string \"" + v.Scalar() + "\"");
      return std::nullopt;
    }
    int64_t i = 0;
    if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, i)) {
      Error(v, Sub(path, key), "must be an integer, got " + Show(v));
      return std::nullopt;
    }
    if (i < lo || i > hi) {
      std::string range = hi == INT64_MAX
                              ? "must be >= " + std::to_string(lo)
                              : "must be " + std::to_string(lo) + ".." + std::to_string(hi);
      Error(v, Sub(path, key), range + ", got " + std::to_string(i));
      return std::nullopt;
    }
    return i;
  }

  // One of `choices`.
  std::optional<std::string> Enum(const YAML::Node& map, const std::string& path, const char* key,
                                  bool required, std::span<const std::string_view> choices) {
    std::optional<std::string> s = String(map, path, key, required);
    if (!s) return std::nullopt;
    if (std::find(choices.begin(), choices.end(), *s) == choices.end()) {
      Error(map[key], Sub(path, key), "must be one of " + JoinKeys(choices) + ", got " + *s);
      return std::nullopt;
    }
    return s;
  }

  std::optional<std::vector<std::string>> StringList(const YAML::Node& map, const std::string& path,
                                                     const char* key, bool required) {
    YAML::Node v = Get(map, path, key, required);
    if (!v.IsDefined()) return std::nullopt;
    if (!v.IsSequence() || v.size() == 0) {
      Error(v, Sub(path, key), "must be a non-empty list of names");
      return std::nullopt;
    }
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (size_t i = 0; i < v.size(); ++i) {
      const YAML::Node& e = v[i];
      if (!e.IsScalar() || e.Scalar().empty()) {
        Error(e, Index(Sub(path, key), i), "must be a name");
        continue;
      }
      if (!seen.insert(e.Scalar()).second) {
        Error(e, Index(Sub(path, key), i), "duplicate name " + e.Scalar());
        continue;
      }
      out.push_back(e.Scalar());
    }
    return out;
  }

 public:
  // A value as an error message shows it.
  // True for a quoted scalar ('0.01', "0.01"): a string, whatever it spells, so a number
  // written in quotes is a type error like any other.
  static bool Quoted(const YAML::Node& v) { return v.IsScalar() && v.Tag() == "!"; }

  static std::string Show(const YAML::Node& v) {
    if (v.IsScalar()) return v.Scalar();
    if (v.IsSequence()) return "a list";
    if (v.IsMap()) return "a mapping";
    return "nothing";
  }

 private:
  std::string file_;
  std::vector<std::string> errors_;
};


}  // namespace cutover::yaml

#endif  // CUTOVER_CORE_YAML_READER_H_
