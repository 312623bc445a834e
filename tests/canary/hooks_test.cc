#include "canary/hooks.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/harness/scripted_http_server.h"
#include "tests/harness/test_env.h"

namespace cutover::canary {
namespace {

using cutover::testing::ScriptedHttpServer;
using cutover::testing::ScriptedResponse;
using cutover::testing::TempDir;

HookEvent Event(const std::string& hook) {
  return HookEvent{.hook = hook,
                   .rollout = "infer",
                   .rollout_id = 7,
                   .step = 2,
                   .weight = 50,
                   .from_weight = 25,
                   .reason = ""};
}

TEST(HookEventJsonTest, CarriesEveryField) {
  nlohmann::json j = nlohmann::json::parse(HookEventJson(Event("pre_step")));
  EXPECT_EQ(j, nlohmann::json::parse(R"({"schema": "cutover.canary-hook/1", "hook": "pre_step",
      "rollout": "infer", "rollout_id": 7, "step": 2, "weight": 50, "from_weight": 25,
      "reason": ""})"));
}

TEST(RealHookRunnerTest, PostsTheEventAndPassesOn2xx) {
  ScriptedHttpServer server;
  ASSERT_TRUE(server.Start().ok());
  server.Enqueue({.status = 204});
  RealHookRunner runner;
  HookSpec hook{.url = server.Url("/pre?token=abc")};
  ASSERT_TRUE(runner.Run(hook, Event("pre_step")).ok());
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].target, "/pre?token=abc");
  EXPECT_EQ(reqs[0].Header("Content-Type").value_or(""), "application/json");
  EXPECT_EQ(nlohmann::json::parse(reqs[0].body)["step"], 2);
}

TEST(RealHookRunnerTest, OtherAnswersFailWithoutRetryAndQuoteTheBody) {
  ScriptedHttpServer server;
  ASSERT_TRUE(server.Start().ok());
  server.Enqueue({.status = 503, .body = "not yet:\nwarming up"});
  RealHookRunner runner;
  Status s = runner.Run(HookSpec{.url = server.Url("/confirm")}, Event("confirm_promotion"));
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), "hook confirm_promotion: " + server.Url("/confirm") +
                             " answered 503: not yet: warming up");
  EXPECT_EQ(server.request_count(), 1u) << "the controller asks again, not the runner";
}

TEST(RealHookRunnerTest, SlowEndpointTimesOut) {
  ScriptedHttpServer server;
  ASSERT_TRUE(server.Start().ok());
  server.Enqueue({.status = 200, .delay = std::chrono::milliseconds(3000)});
  RealHookRunner runner;
  Status s =
      runner.Run(HookSpec{.url = server.Url("/"), .timeout = Millis(200)}, Event("pre_step"));
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message().rfind("hook pre_step: POST " + server.Url("/") + ": Timeout", 0), 0u)
      << s.message();
}

TEST(RealHookRunnerTest, CommandGetsPlaceholdersAndItsExitDecides) {
  TempDir dir;
  RealHookRunner runner;
  const std::string out = dir.Join("out");
  HookSpec ok{.command = "echo {{name}} {{step}} {{weight}} > " + out};
  ASSERT_TRUE(runner.Run(ok, Event("pre_step")).ok());
  EXPECT_EQ(ReadFile(out).value_or(""), "infer 2 50\n");

  Status s = runner.Run(HookSpec{.command = "echo refusing; exit 3"}, Event("confirm_promotion"));
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), "hook confirm_promotion: sh exited with status 3: refusing");

  s = runner.Run(HookSpec{.command = "sleep 5", .timeout = Millis(200)}, Event("pre_step"));
  EXPECT_EQ(s.message(), "hook pre_step: sh timed out after 200 ms");
}

}  // namespace
}  // namespace cutover::canary
