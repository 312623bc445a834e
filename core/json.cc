#include "core/json.h"

#include <cmath>
#include <limits>

#include "core/file_util.h"
#include "core/read_input.h"

namespace cutover {
namespace {

using nlohmann::json;

std::string Prefix(std::string_view what) {
  std::string s(what);
  s += ": ";
  return s;
}

// 1-based line and byte column of `offset` in `text`.
std::string Position(std::string_view text, size_t offset) {
  if (offset > text.size()) offset = text.size();
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
}

// The offset of the first bracket that nests deeper than kMaxJsonDepth, or npos.
size_t TooDeepAt(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1, column
// 2: " prefix (we compute the position ourselves, in bytes).
std::string Reason(const char* what) {
  std::string_view s(what);
  if (size_t close = s.find("] "); !s.empty() && s[0] == '[' && close != std::string_view::npos) {
    s.remove_prefix(close + 2);
  }
  if (s.substr(0, 11) == "parse error") {
    if (size_t colon = s.find(": "); colon != std::string_view::npos) s.remove_prefix(colon + 2);
  }
  return std::string(s);
}

std::string TypeName(const json& v) { return v.type_name(); }

// Walks an RFC 6901 pointer. Returns the value, nullptr when absent, or sets *bad when malformed.
const json* Walk(const json& doc, std::string_view pointer, std::string* bad) {
  if (pointer.empty()) return &doc;
  if (pointer[0] != '/') {
    *bad = "must start with '/'";
    return nullptr;
  }
  const json* cur = &doc;
  size_t pos = 1;
  while (true) {
    size_t end = pointer.find('/', pos);
    std::string_view raw =
        pointer.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    std::string token;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '~') {
        token += raw[i];
      } else if (i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        token += raw[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        *bad = "bad escape '" + std::string(raw.substr(i, 2)) + "'";
        return nullptr;
      }
    }
    if (cur != nullptr) {
      if (cur->is_object()) {
        auto it = cur->find(token);
        cur = it == cur->end() ? nullptr : &*it;
      } else if (cur->is_array()) {
        bool digits = !token.empty() && token.size() <= 18 && (token == "0" || token[0] != '0');
        for (char c : token) digits = digits && c >= '0' && c <= '9';
        size_t index = digits ? std::stoull(token) : std::numeric_limits<size_t>::max();
        cur = index < cur->size() ? &(*cur)[index] : nullptr;
      } else {
        cur = nullptr;
      }
    }
    // Keep scanning when absent, so a malformed escape later in the pointer is still reported.
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return cur;
}

// The value at the pointer, or the "missing"/"bad pointer" error.
Result<const json*> At(const json& doc, std::string_view pointer, std::string_view what) {
  std::string bad;
  const json* v = Walk(doc, pointer, &bad);
  if (!bad.empty()) {
    return Status::InvalidArgument(Prefix(what) + "bad JSON pointer '" + std::string(pointer) +
                                   "': " + bad);
  }
  if (v == nullptr) {
    return Status::InvalidArgument(Prefix(what) + std::string(pointer) + ": missing");
  }
  return v;
}

Status WrongType(std::string_view what, std::string_view pointer, std::string_view expected,
                 const json& v) {
  return Status::InvalidArgument(Prefix(what) +
                                 std::string(pointer.empty() ? "(document)" : pointer) +
                                 ": expected " + std::string(expected) + ", got " + TypeName(v));
}

Status BadNumber(std::string_view what, std::string_view pointer, const json& v,
                 std::string_view problem) {
  return Status::InvalidArgument(Prefix(what) + std::string(pointer) + ": " + DumpJson(v) + " " +
                                 std::string(problem));
}

}  // namespace

Result<json> ParseJson(std::string_view text, std::string_view what) {
  if (size_t deep = TooDeepAt(text); deep != std::string_view::npos) {
    return Status::InvalidArgument(Prefix(what) + Position(text, deep) + ": nesting deeper than " +
                                   std::to_string(kMaxJsonDepth));
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    return Status::InvalidArgument(Prefix(what) + Position(text, offset) + ": " + Reason(e.what()));
  } catch (const std::exception& e) {
    return Status::InvalidArgument(Prefix(what) + Reason(e.what()));
  }
}

Result<json> LoadJsonFile(const std::string& path) {
  // "-" reads standard input (core/read_input.h), as every file argument does.
  Result<std::string> text = ReadInput(path);
  if (!text.ok()) return text.status();
  return ParseJson(*text, path);
}

std::string DumpJson(const json& doc, int indent) {
  try {
    return doc.dump(indent, ' ', false, json::error_handler_t::replace);
  } catch (const std::exception& e) {
    // Not reachable with the replace handler; keep the no-throw promise regardless.
    return "null";
  }
}

Result<int> SchemaVersion(const json& doc, std::string_view family, int max_version,
                          std::string_view what) {
  if (!doc.is_object()) {
    return Status::InvalidArgument(Prefix(what) + "expected a JSON object, got " + TypeName(doc));
  }
  auto it = doc.find("schema");
  if (it == doc.end()) return Status::InvalidArgument(Prefix(what) + "no \"schema\" field");
  if (!it->is_string()) {
    return Status::InvalidArgument(Prefix(what) + "\"schema\" is not a string");
  }
  const std::string& schema = it->get_ref<const std::string&>();
  size_t slash = schema.rfind('/');
  std::string_view ver =
      slash == std::string::npos ? std::string_view() : std::string_view(schema).substr(slash + 1);
  bool valid =
      slash != std::string::npos && slash > 0 && !ver.empty() && ver.size() <= 9 && ver[0] != '0';
  for (char c : ver) valid = valid && c >= '0' && c <= '9';
  if (!valid) {
    return Status::InvalidArgument(Prefix(what) + "malformed schema '" + schema +
                                   "' (expected FAMILY/VERSION)");
  }
  if (std::string_view(schema).substr(0, slash) != family) {
    return Status::InvalidArgument(Prefix(what) + "schema " + schema + ", expected " +
                                   std::string(family));
  }
  int version = std::stoi(std::string(ver));
  if (version > max_version) {
    return Status::InvalidArgument(Prefix(what) + "schema " + schema +
                                   " is newer than this cutover reads (" +
                                   std::to_string(max_version) + "); upgrade cutover");
  }
  return version;
}

Status CheckSchema(const json& doc, std::string_view family, int max_version,
                   std::string_view what) {
  return SchemaVersion(doc, family, max_version, what).status();
}

const json* FindJson(const json& doc, std::string_view json_pointer) {
  std::string bad;
  const json* v = Walk(doc, json_pointer, &bad);
  return bad.empty() ? v : nullptr;
}

Result<std::string> GetString(const json& doc, std::string_view json_pointer,
                              std::string_view what) {
  CUTOVER_ASSIGN_OR_RETURN(const json* v, At(doc, json_pointer, what));
  if (!v->is_string()) return WrongType(what, json_pointer, "a string", *v);
  return v->get<std::string>();
}

Result<int64_t> GetInt(const json& doc, std::string_view json_pointer, std::string_view what) {
  CUTOVER_ASSIGN_OR_RETURN(const json* v, At(doc, json_pointer, what));
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return BadNumber(what, json_pointer, *v, "is out of range");
    }
    return static_cast<int64_t>(u);
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::trunc(d) != d) return BadNumber(what, json_pointer, *v, "is not an integer");
    if (!(d >= -9.2233720368547758e18 && d < 9.2233720368547758e18)) {
      return BadNumber(what, json_pointer, *v, "is out of range");
    }
    return static_cast<int64_t>(d);
  }
  return WrongType(what, json_pointer, "an integer", *v);
}

Result<uint64_t> GetUint(const json& doc, std::string_view json_pointer, std::string_view what) {
  CUTOVER_ASSIGN_OR_RETURN(const json* v, At(doc, json_pointer, what));
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) return BadNumber(what, json_pointer, *v, "is out of range");
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::trunc(d) != d) return BadNumber(what, json_pointer, *v, "is not an integer");
    if (!(d >= 0 && d < 1.8446744073709552e19)) {
      return BadNumber(what, json_pointer, *v, "is out of range");
    }
    return static_cast<uint64_t>(d);
  }
  return WrongType(what, json_pointer, "an integer", *v);
}

Result<double> GetDouble(const json& doc, std::string_view json_pointer, std::string_view what) {
  CUTOVER_ASSIGN_OR_RETURN(const json* v, At(doc, json_pointer, what));
  if (!v->is_number()) return WrongType(what, json_pointer, "a number", *v);
  return v->get<double>();
}

Result<bool> GetBool(const json& doc, std::string_view json_pointer, std::string_view what) {
  CUTOVER_ASSIGN_OR_RETURN(const json* v, At(doc, json_pointer, what));
  if (!v->is_boolean()) return WrongType(what, json_pointer, "a boolean", *v);
  return v->get<bool>();
}

Result<const json*> GetArray(const json& doc, std::string_view json_pointer,
                             std::string_view what) {
  CUTOVER_ASSIGN_OR_RETURN(const json* v, At(doc, json_pointer, what));
  if (!v->is_array()) return WrongType(what, json_pointer, "an array", *v);
  return v;
}

Result<const json*> GetObject(const json& doc, std::string_view json_pointer,
                              std::string_view what) {
  CUTOVER_ASSIGN_OR_RETURN(const json* v, At(doc, json_pointer, what));
  if (!v->is_object()) return WrongType(what, json_pointer, "an object", *v);
  return v;
}

}  // namespace cutover
