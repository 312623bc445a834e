// Pseudonyms for reports that leave the company (`cutover assess --redact`): hostnames, GPU and
// MIG UUIDs, serial numbers and IPv4 addresses found in input documents are replaced by stable
// names (host-1, GPU-<hmac prefix>, serial-1, ip-1), the same value always getting the same name,
// so the HTML, Markdown, JSON and JUnit outputs agree.
//
// Usage: Learn() every input document first (collects the known values), then Apply() to each.
//
// Thread-safety: not thread-safe; one Redactor per assessment.
#ifndef CUTOVER_REPORT_REDACT_H_
#define CUTOVER_REPORT_REDACT_H_

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cutover::report {

class Redactor {
 public:
  // Collects the values to hide from `doc`: "hostname" strings (and their first DNS label),
  // "uuid" strings, and every string under a key containing "serial".
  void Learn(const nlohmann::json& doc);

  // Replaces, in every string value of `doc` (keys stay), each learned value on token
  // boundaries, every GPU-/MIG- UUID and, outside keys containing "version", every IPv4 address.
  void Apply(nlohmann::json& doc);

  // `text` with the same replacements (IPv4 addresses included).
  std::string ApplyText(std::string_view text);

  // The pseudonym of each value seen so far, original -> pseudonym.
  const std::map<std::string, std::string>& mapping() const { return names_; }

 private:
  std::string NameFor(const std::string& value, const std::string& kind);
  std::string Replace(std::string_view text, bool ips);

  std::map<std::string, std::string> names_;
  std::map<std::string, int> counters_;
};

}  // namespace cutover::report

#endif  // CUTOVER_REPORT_REDACT_H_
