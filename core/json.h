// JSON helpers over nlohmann-json that never throw to their callers: parsing with positioned
// errors, the versioned-schema check every result document goes through, and typed getters whose
// errors name the JSON pointer that failed.
//
// Every cutover result document carries "schema": "<family>/<version>", for example
// "cutover.fingerprint/1". Readers call CheckSchema (or SchemaVersion) first; a document newer than
// the reader knows is a clear error, never a half-read.
//
// Error messages start with `what` (a file name or "fingerprint"), for example
//   "src.json: line 3, column 7: syntax error while parsing object key - ..."
//   "src.json: /gpus/0/uuid: expected a string, got number"
// All errors are InvalidArgument except file access (LoadJsonFile: NotFound or IoError).
//
// Thread-safety: all functions are thread-safe on distinct documents (and on one document used
// read-only).
#ifndef CUTOVER_CORE_JSON_H_
#define CUTOVER_CORE_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace cutover {

// Documents nested deeper than this are refused by ParseJson (the library recurses on them).
constexpr int kMaxJsonDepth = 512;

// Parses `text`. On error: "WHAT: line L, column C: <reason>" where L and C (1-based, C in bytes)
// locate the byte at which the parser stopped.
Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what);

// Reads and parses the file at `path`; errors start with the path.
Result<nlohmann::json> LoadJsonFile(const std::string& path);

// Serialises `doc` (indent < 0: one line); invalid UTF-8 in strings becomes U+FFFD.
std::string DumpJson(const nlohmann::json& doc, int indent = -1);

// Checks doc["schema"] == "<family>/<N>" with 1 <= N <= max_version and returns N. Errors:
//   "WHAT: expected a JSON object, got array"
//   "WHAT: no \"schema\" field"
//   "WHAT: \"schema\" is not a string"
//   "WHAT: malformed schema 'x' (expected FAMILY/VERSION)"
//   "WHAT: schema cutover.diff/1, expected cutover.fingerprint"
//   "WHAT: schema cutover.fingerprint/2 is newer than this cutover reads (1); upgrade cutover"
Result<int> SchemaVersion(const nlohmann::json& doc, std::string_view family, int max_version,
                          std::string_view what);

// SchemaVersion without the version.
Status CheckSchema(const nlohmann::json& doc, std::string_view family, int max_version,
                   std::string_view what);

// The value at `json_pointer` (RFC 6901, "" is the whole document), or nullptr when it is absent
// or the pointer is malformed. For optional fields.
const nlohmann::json* FindJson(const nlohmann::json& doc, std::string_view json_pointer);

// Typed getters. Errors: "WHAT: /a/b: missing", "WHAT: /a/b: expected a string, got number",
// "WHAT: /a/b: 1.5 is not an integer", "WHAT: /a/b: -1 is out of range",
// "WHAT: bad JSON pointer 'a': <reason>".
Result<std::string> GetString(const nlohmann::json& doc, std::string_view json_pointer,
                              std::string_view what);
Result<int64_t> GetInt(const nlohmann::json& doc, std::string_view json_pointer,
                       std::string_view what);
Result<uint64_t> GetUint(const nlohmann::json& doc, std::string_view json_pointer,
                         std::string_view what);
// Any JSON number.
Result<double> GetDouble(const nlohmann::json& doc, std::string_view json_pointer,
                         std::string_view what);
Result<bool> GetBool(const nlohmann::json& doc, std::string_view json_pointer,
                     std::string_view what);
// The array or object itself; the pointer stays valid while `doc` is unchanged.
Result<const nlohmann::json*> GetArray(const nlohmann::json& doc, std::string_view json_pointer,
                                       std::string_view what);
Result<const nlohmann::json*> GetObject(const nlohmann::json& doc, std::string_view json_pointer,
                                        std::string_view what);

}  // namespace cutover

#endif  // CUTOVER_CORE_JSON_H_
