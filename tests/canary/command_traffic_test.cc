#include "canary/command_traffic.h"

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover::canary {
namespace {

using cutover::testing::TempDir;

TEST(CanaryPercentOfTest, InvertsPlanWeightsForEveryPercentAndSideSize) {
  for (int nb = 1; nb <= 4; ++nb) {
    for (int nc = 1; nc <= 3; ++nc) {
      std::vector<std::string> baseline, canary;
      for (int i = 0; i < nb; ++i) baseline.push_back("b" + std::to_string(i));
      for (int i = 0; i < nc; ++i) canary.push_back("c" + std::to_string(i));
      for (int p = 0; p <= 100; ++p) {
        WeightPlan plan = PlanWeights(p, baseline, canary).value();
        Result<int> back = CanaryPercentOf(plan.weights, baseline, canary);
        ASSERT_TRUE(back.ok()) << back.status().ToString();
        EXPECT_EQ(*back, p) << nb << " baseline, " << nc << " canary";
      }
    }
  }
}

TEST(CanaryPercentOfTest, Errors) {
  EXPECT_EQ(CanaryPercentOf({{"x", 1}}, {"a"}, {"b"}).status().message(),
            "command traffic: x is in neither traffic.baseline nor traffic.canary");
  EXPECT_EQ(CanaryPercentOf({{"a", 0}, {"b", 0}}, {"a"}, {"b"}).status().message(),
            "command traffic: every weight is 0");
  EXPECT_EQ(CanaryPercentOf({{"a", -1}}, {"a"}, {"b"}).status().message(),
            "command traffic: negative weight -1 for a");
  EXPECT_EQ(CanaryPercentOf({{"a", 7}, {"b", 5}, {"c", 1}}, {"a", "c"}, {"b"}).status().message(),
            "command traffic: weights {\"a\":7,\"b\":5,\"c\":1} are not those of any canary "
            "percent");
}

TEST(ParsePercentOutputTest, LastNonEmptyLine) {
  EXPECT_EQ(ParsePercentOutput("25\n").value(), 25);
  EXPECT_EQ(ParsePercentOutput("warning: slow API\n  100% \n\n").value(), 100);
  EXPECT_EQ(ParsePercentOutput("0").value(), 0);
  for (const char* bad : {"", "101", "-1", "2.5", "25 percent", "1000"}) {
    EXPECT_EQ(ParsePercentOutput(bad).status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParsePercentOutput("error: 403 Forbidden\n").status().message(),
            "get_weight printed 'error: 403 Forbidden', expected the canary percent (an integer "
            "0..100)");
}

// A load balancer that is a file holding the canary percent, driven by real shell commands.
class CommandTrafficTest : public ::testing::Test {
 protected:
  CommandTrafficOptions Options() {
    return {.set_weight = "echo {{weight}} > " + lb_ + " && echo '{{canary}}' > " + lb_ + ".who",
            .get_weight = "cat " + lb_,
            .baseline = {"src1", "src2"},
            .canary = {"dst1"},
            .timeout = std::chrono::milliseconds(5000)};
  }
  TempDir dir_;
  std::string lb_ = dir_.Join("lb");
};

TEST_F(CommandTrafficTest, SetsPercentsAndReadsBackTheSameWeights) {
  CommandTraffic t(Options());
  for (int p : {0, 1, 25, 99, 100}) {
    WeightPlan plan = PlanWeights(p, {"src1", "src2"}, {"dst1"}).value();
    ASSERT_TRUE(t.SetWeights(plan.weights).ok());
    EXPECT_EQ(ReadFile(lb_).value_or(""), std::to_string(p) + "\n");
    Result<Weights> back = t.ReadWeights({"src1", "src2", "dst1"});
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, plan.weights);
  }
  EXPECT_EQ(ReadFile(lb_ + ".who").value_or(""), "dst1\n");
  EXPECT_EQ(t.ReadWeights({"dst1"}).value(), (Weights{{"dst1", 100}}));
  EXPECT_EQ(t.ReadWeights({"other"}).status().message(),
            "command traffic: other is in neither traffic.baseline nor traffic.canary");
  EXPECT_EQ(t.ReadCounters().status().code(), Code::kUnimplemented);
}

TEST_F(CommandTrafficTest, FailuresQuoteTheCommandAndItsLastLine) {
  CommandTrafficOptions o = Options();
  o.set_weight = "echo 'lb: no such target group' >&2; exit 4 # {{weight}}";
  o.get_weight = "echo maintenance";
  CommandTraffic t(o);
  Status s = t.SetWeights({{"src1", 100}, {"src2", 100}, {"dst1", 0}});
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "command traffic: set_weight failed: sh exited with status 4: lb: no such target "
            "group");
  EXPECT_EQ(t.ReadWeights({"dst1"}).status().message(),
            "command traffic: get_weight printed 'maintenance', expected the canary percent (an "
            "integer 0..100)");
  o.get_weight = "sleep 5";
  o.timeout = std::chrono::milliseconds(200);
  CommandTraffic slow(o);
  EXPECT_EQ(slow.ReadWeights({"dst1"}).status().message(),
            "command traffic: get_weight failed: sh timed out after 200 ms");
}

}  // namespace
}  // namespace cutover::canary
