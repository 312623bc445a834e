// ImplementationDifferences (compat/compare.h): which cases ran on another library (or on our
// reference kernels) in the two records.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "compat/compare.h"

namespace cutover {

std::vector<SetupDifference> ImplementationDifferences(const CompatRecord& source,
                                                       const CompatRecord& target) {
  std::map<std::string, const CaseResult*> by_id;
  for (const CaseResult& c : target.cases) by_id[c.id] = &c;
  // (source implementation, target implementation) -> the "op/dtype" keys, in first-seen order.
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<std::string>>> pairs;
  for (const CaseResult& s : source.cases) {
    auto it = by_id.find(s.id);
    if (it == by_id.end()) continue;
    const CaseResult& t = *it->second;
    if (s.implementation.empty() || t.implementation.empty() ||
        s.implementation == t.implementation) {
      continue;
    }
    const std::pair<std::string, std::string> key{s.implementation, t.implementation};
    const std::string op_dtype = s.spec.op + "/" + s.spec.dtype;
    auto p =
        std::find_if(pairs.begin(), pairs.end(), [&](const auto& e) { return e.first == key; });
    if (p == pairs.end()) {
      pairs.push_back({key, {op_dtype}});
    } else if (std::find(p->second.begin(), p->second.end(), op_dtype) == p->second.end()) {
      p->second.push_back(op_dtype);
    }
  }
  std::vector<SetupDifference> out;
  for (auto& [key, cases] : pairs) {
    std::string list;
    for (const std::string& c : cases) list += (list.empty() ? "" : ", ") + c;
    SetupDifference d;
    d.text = "implementation " + key.first + " vs " + key.second + " (" + list + ")";
    d.why = "another library (or our reference kernels) sums in another order and may use "
            "other instructions";
    d.cases = std::move(cases);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace cutover
