// Tests of compat/cluster_rules.h: sizes, bus bandwidth factors, the exact answers of every
// collective (against a simulation of the collective), the round-robin schedule and the
// slow-node rule.
#include "compat/cluster_rules.h"

#include <cmath>
#include <random>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cutover {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ClusterRules, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_reduce", 4), 1.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_gather", 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("reduce_scatter", 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("alltoall", 2), 0.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("broadcast", 16), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("sendrecv", 3), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("gemm", 3), 0.0);
}

TEST(ClusterRules, SweepIsInclusiveAndRefusesBadRanges) {
  EXPECT_THAT(*SweepSizes(8, 64, 2), ElementsAre(8, 16, 32, 64));
  EXPECT_THAT(*SweepSizes(8, 100, 4), ElementsAre(8, 32));
  EXPECT_THAT(*SweepSizes(1 << 20, 1 << 20, 2), ElementsAre(1 << 20));
  EXPECT_EQ(SweepSizes(0, 8, 2).status().message(), "--min-bytes must be at least 1");
  EXPECT_EQ(SweepSizes(64, 8, 2).status().message(), "--max-bytes 8 is below --min-bytes 64");
  EXPECT_EQ(SweepSizes(8, 64, 1).status().message(), "--step-factor must be at least 2");
}

TEST(ClusterRules, ElementCountSplitsAcrossRanksWhereNcclTestsDoes) {
  EXPECT_EQ(ElementCount("all_reduce", 64, 4), 16u);
  EXPECT_EQ(ElementCount("all_gather", 64, 4), 4u);
  EXPECT_EQ(ElementCount("alltoall", 8, 4), 0u);  // too small: skipped
  EXPECT_EQ(ElementCount("broadcast", 8, 4), 2u);
}

// Every rank's output of `op`, simulated from InputValue as MPI defines the collective.
std::vector<std::vector<float>> Simulate(const std::string& op, int n, uint64_t c) {
  std::vector<std::vector<float>> out(n);
  for (int r = 0; r < n; ++r) {
    if (op == "all_reduce") {
      for (uint64_t i = 0; i < c; ++i) {
        float s = 0;
        for (int q = 0; q < n; ++q) s += InputValue(q, i);
        out[r].push_back(s);
      }
    } else if (op == "all_gather") {
      for (int q = 0; q < n; ++q)
        for (uint64_t i = 0; i < c; ++i) out[r].push_back(InputValue(q, i));
    } else if (op == "reduce_scatter") {
      for (uint64_t i = 0; i < c; ++i) {
        float s = 0;
        for (int q = 0; q < n; ++q) s += InputValue(q, r * c + i);
        out[r].push_back(s);
      }
    } else if (op == "alltoall") {
      for (int q = 0; q < n; ++q)
        for (uint64_t i = 0; i < c; ++i) out[r].push_back(InputValue(q, r * c + i));
    } else if (op == "broadcast") {
      for (uint64_t i = 0; i < c; ++i) out[r].push_back(InputValue(0, i));
    } else if (op == "sendrecv") {
      for (uint64_t i = 0; i < c; ++i) out[r].push_back(InputValue((r + n - 1) % n, i));
    }
  }
  return out;
}

TEST(ClusterRules, ExpectedValuesMatchASimulationOfEveryCollective) {
  for (const std::string& op : ClusterCollectives()) {
    for (int n : {2, 3, 4, 7}) {
      const uint64_t c = 29;  // not a multiple of 13: every residue crosses a block edge
      auto sim = Simulate(op, n, c);
      for (int r = 0; r < n; ++r) {
        ASSERT_FALSE(sim[r].empty()) << op;
        for (uint64_t i = 0; i < sim[r].size(); ++i) {
          ASSERT_EQ(ExpectedValue(op, r, n, c, i), sim[r][i])
              << op << " n=" << n << " r=" << r << " i=" << i;
        }
      }
    }
  }
}

TEST(ClusterRules, RoundRobinHoldsEveryPairOnceInDisjointRounds) {
  for (int n : {2, 3, 4, 5, 8, 9}) {
    auto rounds = RoundRobinSchedule(n);
    EXPECT_EQ(static_cast<int>(rounds.size()), n % 2 == 0 ? n - 1 : n) << n;
    std::set<std::pair<int, int>> seen;
    for (const auto& round : rounds) {
      std::set<int> busy;
      EXPECT_EQ(static_cast<int>(round.size()), n / 2) << n;
      for (const auto& [a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_TRUE(busy.insert(a).second && busy.insert(b).second) << "rank twice in a round";
        EXPECT_TRUE(seen.insert({a, b}).second) << "pair twice";
      }
    }
    EXPECT_EQ(static_cast<int>(seen.size()), n * (n - 1) / 2) << n;
  }
  EXPECT_TRUE(RoundRobinSchedule(1).empty());
}

// A matrix of `nodes` nodes with `per_node` ranks each in MB/s. Healthy links: one level per run
// drawn from [100, 680] (the spread between runs measured on 2 shared cores) times a jitter per
// directed pair, log-uniform over `spread` (1.3: +-30%, a quiet fabric; 20: what 4 ranks on 2
// shared cores gave, 170 to 3,400 MB/s within one run); the links of `slow` at `slow_bw`.
std::vector<std::vector<double>> Matrix(int nodes, int per_node, const std::string& slow,
                                        double slow_bw, std::vector<std::string>& node_of,
                                        unsigned seed, double spread = 1.3, unsigned pass = 0) {
  std::mt19937 level_rng(seed);
  const double level = std::uniform_real_distribution<double>(100, 680)(level_rng);
  std::mt19937 rng(seed * 1000 + pass);  // the passes of one run share its level
  std::uniform_real_distribution<double> log_jitter(-std::log(spread) / 2, std::log(spread) / 2);
  auto jitter = [&](std::mt19937& g) { return std::exp(log_jitter(g)); };
  const int n = nodes * per_node;
  node_of.clear();
  for (int r = 0; r < n; ++r) node_of.push_back("node" + std::to_string(r / per_node + 1));
  std::vector<std::vector<double>> bw(n, std::vector<double>(n, 0));
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      bw[a][b] = (node_of[a] == slow || node_of[b] == slow) ? slow_bw : level * jitter(rng);
      if (node_of[a] == node_of[b]) bw[a][b] = 5000;  // intra-node: not judged
    }
  }
  return bw;
}

// Three passes of one run, as the suite judges them (JudgePasses).
PassesVerdict ThreePasses(int nodes, int per_node, const std::string& slow, double slow_bw,
                          unsigned seed, double spread) {
  std::vector<std::string> node_of;
  std::vector<std::vector<std::vector<double>>> passes;
  for (unsigned p = 0; p < 3; ++p) {
    passes.push_back(Matrix(nodes, per_node, slow, slow_bw, node_of, seed, spread, p));
  }
  return JudgePasses(passes, node_of);
}

TEST(ClusterRules, NamesTheSlowNodeAndOnlyIt) {
  for (unsigned seed = 0; seed < 200; ++seed) {
    std::vector<std::string> node_of;
    auto bw = Matrix(4, 2, "node3", 6.25, node_of, seed);  // 50 Mbit/s
    SlowVerdict v = JudgeMatrix(bw, node_of);
    ASSERT_TRUE(v.applied);
    ASSERT_THAT(v.slow_nodes, ElementsAre("node3")) << "seed " << seed;
    EXPECT_TRUE(v.slow_links.empty()) << "seed " << seed;
    EXPECT_EQ(v.link_divisor, 0) << "3 healthy nodes: 3 links, too few to judge";
    // On noisy cores, over three passes, a node must be slower than the noise to be told from
    // it: at 1 MB/s (8 Mbit/s) it is 100 times slower than the slowest run's level.
    PassesVerdict p = ThreePasses(4, 2, "node3", 1.0, seed, 20.0);
    ASSERT_THAT(p.slow_nodes, ElementsAre("node3")) << "seed " << seed;
    EXPECT_TRUE(p.slow_links.empty()) << "seed " << seed;
  }
}

TEST(ClusterRules, NamesNoNodeNorLinkWhenAllAreHealthyEvenOnNoisyCores) {
  for (int nodes : {4, 5, 8}) {
    for (unsigned seed = 0; seed < 200; ++seed) {
      std::vector<std::string> node_of;
      SlowVerdict quiet = JudgeMatrix(Matrix(nodes, 1, "", 0, node_of, seed), node_of);
      EXPECT_TRUE(quiet.slow_nodes.empty()) << nodes << " nodes, seed " << seed;
      EXPECT_TRUE(quiet.slow_links.empty()) << nodes << " nodes, seed " << seed;
      EXPECT_EQ(quiet.node_divisor, kSlowFactor);
      PassesVerdict noisy = ThreePasses(nodes, 1, "", 0, seed, 20.0);
      EXPECT_TRUE(noisy.slow_nodes.empty()) << nodes << " nodes, seed " << seed;
      EXPECT_TRUE(noisy.slow_links.empty()) << nodes << " nodes, seed " << seed;
    }
  }
}

// A single noisy pass does name things now and then: the passes and the medians are what keep
// that out of the verdict.
TEST(ClusterRules, OnePassAloneIsNotTheVerdict) {
  int named_by_a_pass = 0;
  for (unsigned seed = 0; seed < 200; ++seed) {
    PassesVerdict v = ThreePasses(5, 1, "", 0, seed, 20.0);
    for (const SlowVerdict& p : v.passes) {
      if (!p.slow_nodes.empty() || !p.slow_links.empty()) ++named_by_a_pass;
    }
    EXPECT_TRUE(v.slow_nodes.empty() && v.slow_links.empty()) << "seed " << seed;
  }
  EXPECT_GT(named_by_a_pass, 0) << "the noisy model never fooled one pass: it is too quiet";
}

TEST(ClusterRules, TheDivisorIsThreeOnAQuietFabricAndWidensWithTheSpread) {
  EXPECT_EQ(SlowDivisor({100, 101, 99, 100, 102}, 100), kSlowFactor);
  EXPECT_GT(SlowDivisor({100, 400, 25, 300, 30}, 100), 10);
  EXPECT_EQ(SlowDivisor({}, 100), kSlowFactor);
  EXPECT_EQ(SlowDivisor({1, 2}, 0), kSlowFactor);
}

TEST(ClusterRules, NamesASlowLinkBetweenHealthyNodes) {
  std::vector<std::string> node_of;
  auto bw = Matrix(5, 1, "", 0, node_of, 7);
  bw[1][3] = bw[3][1] = 6.25;
  SlowVerdict v = JudgeMatrix(bw, node_of);
  EXPECT_TRUE(v.slow_nodes.empty());
  ASSERT_EQ(v.slow_links.size(), 1u);
  EXPECT_EQ(v.slow_links[0], std::make_pair(std::string("node2"), std::string("node4")));
  // On noisy cores a link must be slow in every pass (a single link is one value per pass): it
  // is found in nearly every run, never with a node named.
  int found = 0;
  for (unsigned seed = 0; seed < 50; ++seed) {
    std::vector<std::vector<std::vector<double>>> passes;
    for (unsigned p = 0; p < 3; ++p) {
      passes.push_back(Matrix(8, 1, "", 0, node_of, seed, 20.0, p));
      passes.back()[1][3] = passes.back()[3][1] = 1;
    }
    PassesVerdict n = JudgePasses(passes, node_of);
    EXPECT_TRUE(n.slow_nodes.empty()) << "seed " << seed;
    EXPECT_LE(n.slow_links.size(), 1u) << "seed " << seed;
    if (n.slow_links.size() == 1) {
      EXPECT_EQ(n.slow_links[0], std::make_pair(std::string("node2"), std::string("node4")));
      ++found;
    }
  }
  EXPECT_GE(found, 45) << "of 50 noisy runs";
}

TEST(ClusterRules, TwoNodesAreNotJudged) {
  std::vector<std::string> node_of;
  auto bw = Matrix(2, 2, "node2", 25, node_of, 1);
  SlowVerdict v = JudgeMatrix(bw, node_of);
  EXPECT_FALSE(v.applied);
  EXPECT_THAT(v.reason, HasSubstr("2 node(s): the rule needs 3 or more"));
}

}  // namespace
}  // namespace cutover
