// Tests of compat/cluster_rules.h: sizes, bus bandwidth factors, the exact answers of every
// collective (against a simulation of the collective), the round-robin schedule and the
// slow-node rule.
#include "compat/cluster_rules.h"

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
          ASSERT_EQ(ExpectedValue(op, r, n, c, i), sim[r][i]) << op << " n=" << n << " r=" << r
                                                              << " i=" << i;
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
// drawn from [100, 680] (the spread between runs measured on 2 shared cores) times a jitter of
// +-30% per directed pair; the links of `slow` at `slow_bw`.
std::vector<std::vector<double>> Matrix(int nodes, int per_node, const std::string& slow,
                                        double slow_bw, std::vector<std::string>& node_of,
                                        unsigned seed) {
  std::mt19937 rng(seed);
  const double level = std::uniform_real_distribution<double>(100, 680)(rng);
  std::uniform_real_distribution<double> jitter(0.7, 1.3);
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

TEST(ClusterRules, NamesTheSlowNodeAndOnlyIt) {
  for (unsigned seed = 0; seed < 200; ++seed) {
    std::vector<std::string> node_of;
    auto bw = Matrix(4, 2, "node3", 6.25, node_of, seed);  // 50 Mbit/s
    SlowVerdict v = JudgeMatrix(bw, node_of);
    ASSERT_TRUE(v.applied);
    ASSERT_THAT(v.slow_nodes, ElementsAre("node3")) << "seed " << seed;
    EXPECT_TRUE(v.slow_links.empty()) << "seed " << seed;
  }
}

TEST(ClusterRules, NamesNoNodeWhenAllAreHealthy) {
  for (unsigned seed = 0; seed < 200; ++seed) {
    std::vector<std::string> node_of;
    auto bw = Matrix(5, 1, "", 0, node_of, seed);
    SlowVerdict v = JudgeMatrix(bw, node_of);
    EXPECT_TRUE(v.slow_nodes.empty()) << "seed " << seed;
    EXPECT_TRUE(v.slow_links.empty()) << "seed " << seed;
  }
}

TEST(ClusterRules, NamesASlowLinkBetweenHealthyNodes) {
  std::vector<std::string> node_of;
  auto bw = Matrix(5, 1, "", 0, node_of, 7);
  bw[1][3] = bw[3][1] = 6.25;
  SlowVerdict v = JudgeMatrix(bw, node_of);
  EXPECT_TRUE(v.slow_nodes.empty());
  ASSERT_EQ(v.slow_links.size(), 1u);
  EXPECT_EQ(v.slow_links[0], std::make_pair(std::string("node2"), std::string("node4")));
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
