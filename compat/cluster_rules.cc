#include "compat/cluster_rules.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace cutover {

double BusBandwidthFactor(const std::string& op, int ranks) {
  if (ranks < 1) return 0;
  const double n = ranks;
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter" || op == "alltoall") return (n - 1) / n;
  if (op == "broadcast" || op == "sendrecv") return 1.0;
  return 0;
}

Result<std::vector<uint64_t>> SweepSizes(uint64_t min_bytes, uint64_t max_bytes, int factor) {
  if (min_bytes == 0) return Status::InvalidArgument("--min-bytes must be at least 1");
  if (max_bytes < min_bytes) {
    return Status::InvalidArgument("--max-bytes " + std::to_string(max_bytes) +
                                   " is below --min-bytes " + std::to_string(min_bytes));
  }
  if (factor < 2) return Status::InvalidArgument("--step-factor must be at least 2");
  std::vector<uint64_t> sizes;
  for (uint64_t s = min_bytes; s <= max_bytes; s *= static_cast<uint64_t>(factor)) {
    sizes.push_back(s);
    if (s > max_bytes / static_cast<uint64_t>(factor)) break;
  }
  return sizes;
}

uint64_t ElementCount(const std::string& op, uint64_t bytes, int ranks) {
  const uint64_t elements = bytes / sizeof(float);
  if (op == "all_gather" || op == "reduce_scatter" || op == "alltoall") {
    return ranks > 0 ? elements / static_cast<uint64_t>(ranks) : 0;
  }
  return elements;
}

float ExpectedValue(const std::string& op, int rank, int ranks, uint64_t count, uint64_t i) {
  const float rank_sum = static_cast<float>(ranks) * static_cast<float>(ranks + 1) / 2.0f;
  if (op == "all_reduce") return rank_sum + static_cast<float>(ranks) * (i % 13);
  if (op == "all_gather") return InputValue(static_cast<int>(i / count), i % count);
  if (op == "reduce_scatter") {
    return rank_sum + static_cast<float>(ranks) * ((static_cast<uint64_t>(rank) * count + i) % 13);
  }
  if (op == "alltoall") {
    return InputValue(static_cast<int>(i / count), static_cast<uint64_t>(rank) * count + i % count);
  }
  if (op == "broadcast") return InputValue(0, i);
  if (op == "sendrecv") return InputValue((rank + ranks - 1) % ranks, i);
  return 0;
}

std::vector<std::vector<std::pair<int, int>>> RoundRobinSchedule(int ranks) {
  std::vector<std::vector<std::pair<int, int>>> rounds;
  if (ranks < 2) return rounds;
  // The circle method over an even count; the extra slot (ranks when odd) means "idle".
  const int m = ranks % 2 == 0 ? ranks : ranks + 1;
  std::vector<int> slot(m);
  for (int i = 0; i < m; ++i) slot[i] = i;
  for (int r = 0; r < m - 1; ++r) {
    std::vector<std::pair<int, int>> round;
    for (int i = 0; i < m / 2; ++i) {
      int a = slot[i], b = slot[m - 1 - i];
      if (a >= ranks || b >= ranks) continue;
      round.emplace_back(std::min(a, b), std::max(a, b));
    }
    rounds.push_back(std::move(round));
    // Keep slot 0 fixed, rotate the rest by one.
    std::rotate(slot.begin() + 1, slot.end() - 1, slot.end());
  }
  return rounds;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

SlowVerdict JudgeMatrix(const std::vector<std::vector<double>>& bw,
                        const std::vector<std::string>& node_of) {
  SlowVerdict v;
  std::set<std::string> node_set(node_of.begin(), node_of.end());
  std::vector<std::string> nodes(node_set.begin(), node_set.end());
  if (nodes.size() < 3) {
    v.reason = std::to_string(nodes.size()) +
               " node(s): the rule needs 3 or more to pin a slow link on one end";
    return v;
  }
  // Every directed rank pair between two nodes, both directions, into the node pair's samples.
  std::map<std::pair<std::string, std::string>, std::vector<double>> samples;
  for (size_t a = 0; a < bw.size() && a < node_of.size(); ++a) {
    for (size_t b = 0; b < bw[a].size() && b < node_of.size(); ++b) {
      if (node_of[a] == node_of[b] || bw[a][b] <= 0) continue;
      samples[std::minmax(node_of[a], node_of[b])].push_back(bw[a][b]);
    }
  }
  std::map<std::pair<std::string, std::string>, double> link;
  for (auto& [key, s] : samples) link[key] = Median(s);
  std::vector<double> medians;
  for (const std::string& n : nodes) {
    std::vector<double> mine;
    for (const auto& [key, value] : link) {
      if (key.first == n || key.second == n) mine.push_back(value);
    }
    v.node_median[n] = Median(mine);
    medians.push_back(v.node_median[n]);
  }
  v.applied = true;
  v.reference = Median(medians);
  v.node_divisor = SlowDivisor(medians, v.reference);
  std::set<std::string> slow;
  for (const std::string& n : nodes) {
    if (v.node_median[n] < v.reference / v.node_divisor) slow.insert(n);
  }
  v.slow_nodes.assign(slow.begin(), slow.end());
  std::vector<double> healthy;
  for (const auto& [key, value] : link) {
    if (!slow.count(key.first) && !slow.count(key.second)) healthy.push_back(value);
  }
  const double link_reference = Median(healthy);
  if (healthy.size() >= kMinLinksJudged) {
    v.link_divisor = SlowDivisor(healthy, link_reference);
    for (const auto& [key, value] : link) {
      if (slow.count(key.first) || slow.count(key.second)) continue;
      if (value < link_reference / v.link_divisor) v.slow_links.push_back(key);
    }
  }
  return v;
}

PassesVerdict JudgePasses(const std::vector<std::vector<std::vector<double>>>& passes,
                          const std::vector<std::string>& node_of) {
  PassesVerdict out;
  const size_t n = node_of.size();
  out.median_bw.assign(n, std::vector<double>(n, 0.0));
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      std::vector<double> s;
      for (const auto& m : passes) s.push_back(m[a][b]);
      out.median_bw[a][b] = Median(s);
    }
  }
  out.median = JudgeMatrix(out.median_bw, node_of);
  std::map<std::string, int> node_votes;
  std::map<std::pair<std::string, std::string>, int> link_votes;
  for (const auto& m : passes) {
    out.passes.push_back(JudgeMatrix(m, node_of));
    for (const std::string& s : out.passes.back().slow_nodes) ++node_votes[s];
    for (const auto& l : out.passes.back().slow_links) ++link_votes[l];
  }
  const int majority = static_cast<int>(passes.size()) / 2 + 1;
  for (const std::string& s : out.median.slow_nodes) {
    if (node_votes[s] >= majority) out.slow_nodes.push_back(s);
  }
  // A link is one value per pass, not a node's many: it must be slow in every pass.
  for (const auto& l : out.median.slow_links) {
    if (link_votes[l] == static_cast<int>(passes.size())) out.slow_links.push_back(l);
  }
  return out;
}

double SlowDivisor(const std::vector<double>& values, double reference) {
  if (!(reference > 0)) return kSlowFactor;
  // The spread of the values at or above the reference: what is slow (below it) is what the
  // rule looks for, and must not widen the divisor that would find it.
  std::vector<double> dev;
  for (double v : values) {
    if (v >= reference) dev.push_back(std::log(v / reference));
  }
  return std::max(kSlowFactor, std::exp(kSlowMads * 1.4826 * Median(dev)));
}

}  // namespace cutover
