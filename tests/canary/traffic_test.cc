#include "canary/traffic.h"

#include <gtest/gtest.h>

namespace cutover::canary {
namespace {

TEST(PlanWeightsTest, ZeroAndHundredAreExact) {
  auto zero = PlanWeights(0, {"s1", "s2"}, {"d1"});
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  EXPECT_EQ(zero->weights, (Weights{{"s1", 100}, {"s2", 100}, {"d1", 0}}));
  EXPECT_EQ(zero->share, 0);
  auto full = PlanWeights(100, {"s1", "s2"}, {"d1"});
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->weights, (Weights{{"s1", 0}, {"s2", 0}, {"d1", 100}}));
  EXPECT_EQ(full->share, 100);
}

TEST(PlanWeightsTest, NearestShareInLowestTerms) {
  // 50% over two baseline servers and one canary: canary 2, each baseline 1.
  auto half = PlanWeights(50, {"s1", "s2"}, {"d1"});
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->weights, (Weights{{"s1", 1}, {"s2", 1}, {"d1", 2}}));
  EXPECT_DOUBLE_EQ(half->share, 50);
  // 1%: canary 1 cannot hit it (1 / (1 + 2*50) = 0.990%), canary 2 can: 2 / (2 + 2*99) = 1%.
  auto one = PlanWeights(1, {"s1", "s2"}, {"d1"});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->weights.at("d1"), 2);
  EXPECT_EQ(one->weights.at("s1"), 99);
  EXPECT_DOUBLE_EQ(one->share, 1.0);
  // 25% with one server a side: 1:3.
  auto q = PlanWeights(25, {"s1"}, {"d1"});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->weights, (Weights{{"s1", 3}, {"d1", 1}}));
}

TEST(PlanWeightsTest, EveryPercentWithinHalfAPercent) {
  for (int p = 0; p <= 100; ++p) {
    auto plan = PlanWeights(p, {"a", "b", "c"}, {"x", "y"});
    ASSERT_TRUE(plan.ok());
    EXPECT_NEAR(plan->share, p, 0.5) << p;
    for (const auto& [s, w] : plan->weights) {
      EXPECT_GE(w, 0);
      EXPECT_LE(w, kMaxServerWeight);
      if (p > 0 && p < 100) {
        EXPECT_GE(w, 1) << "no side goes dark between 0 and 100";
      }
    }
  }
}

TEST(PlanWeightsTest, Errors) {
  EXPECT_EQ(PlanWeights(101, {"a"}, {"b"}).status().message(),
            "canary percent must be 0..100, got 101");
  EXPECT_EQ(PlanWeights(-1, {"a"}, {"b"}).status().message(),
            "canary percent must be 0..100, got -1");
  EXPECT_EQ(PlanWeights(5, {}, {"b"}).status().message(),
            "both baseline and canary need at least one server");
}

TEST(RealisedShareTest, DeltasAndResets) {
  std::map<std::string, ServerCounters> before{{"s1", {.responses = 100}},
                                               {"d1", {.responses = 10}}};
  std::map<std::string, ServerCounters> after{{"s1", {.responses = 190}},
                                              {"d1", {.responses = 20}}};
  int64_t total = 0;
  auto share = RealisedShare(before, after, {"d1"}, &total);
  ASSERT_TRUE(share.has_value());
  EXPECT_DOUBLE_EQ(*share, 10.0);
  EXPECT_EQ(total, 100);
  // A reload reset d1's counter to 5: it counts from zero.
  after["d1"].responses = 5;
  share = RealisedShare(before, after, {"d1"}, &total);
  EXPECT_EQ(total, 95);
  EXPECT_NEAR(*share, 100.0 * 5 / 95, 1e-9);
  EXPECT_FALSE(RealisedShare(before, before, {"d1"}).has_value());
}

}  // namespace
}  // namespace cutover::canary
