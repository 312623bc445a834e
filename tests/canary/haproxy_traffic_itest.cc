// HaproxyTraffic against a real HAProxy: weights set and read back through the runtime API, the
// counters from `show stat`, and what a reload does to runtime weights.
#include "canary/haproxy_traffic.h"

#include <gtest/gtest.h>

#include "tests/canary/test_backend.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover::canary {
namespace {

using cutover::testing::Haproxy;

TEST(HaproxyTrafficItest, WeightsCountersAndReload) {
  testing::TestBackend s1("s1"), d1("d1");
  ASSERT_TRUE(s1.Start().ok());
  ASSERT_TRUE(d1.Start().ok());
  Haproxy haproxy(cutover::testing::HaproxyOptions{
      .servers = {{"s1", s1.address(), 1}, {"d1", d1.address(), 0}}});
  Status st = haproxy.Start();
  if (st.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(st.message());
  ASSERT_TRUE(st.ok()) << st.ToString();
  HaproxyTraffic t({.socket = haproxy.admin_socket(), .backend = "infer"});

  auto gen1 = t.Generation();
  ASSERT_TRUE(gen1.ok()) << gen1.status().ToString();
  auto plan = PlanWeights(50, {"s1"}, {"d1"}).value();
  ASSERT_TRUE(t.SetWeights(plan.weights).ok());
  EXPECT_EQ(t.ReadWeights({"s1", "d1"}).value(), (Weights{{"s1", 1}, {"d1", 1}}));

  const std::string url = "http://127.0.0.1:" + std::to_string(haproxy.port()) + "/";
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(cutover::testing::HttpFetch({.url = url}).status, 200);
  }
  auto counters = t.ReadCounters();
  ASSERT_TRUE(counters.ok()) << counters.status().ToString();
  EXPECT_EQ(counters->at("s1").responses + counters->at("d1").responses, 40);
  EXPECT_EQ(counters->at("d1").responses, 20) << "round robin at equal weights";
  EXPECT_EQ(counters->count("BACKEND"), 0u);

  EXPECT_EQ(t.SetWeights({{"zz", 3}}).message(), "haproxy: get weight infer/zz: No such server.");
  HaproxyTraffic wrong({.socket = haproxy.admin_socket(), .backend = "nope"});
  EXPECT_EQ(wrong.ReadCounters().status().message(), "haproxy: show stat: no backend 'nope'");

  // A plain reload drops runtime weights back to the config, with a new worker pid.
  ASSERT_TRUE(haproxy.Reload(Haproxy::ReloadState::kDrop).ok());
  EXPECT_EQ(t.ReadWeights({"s1", "d1"}).value(), (Weights{{"s1", 1}, {"d1", 0}}));
  auto gen2 = t.Generation();
  ASSERT_TRUE(gen2.ok());
  EXPECT_NE(*gen1, *gen2);
}

}  // namespace
}  // namespace cutover::canary
